/// Decodes `Decodable` values from JSON text, without Foundation.
///
/// The text must be one RFC 8259 value in UTF-8 (nesting at most 512 deep); otherwise the error is
/// `DecodingError.dataCorrupted` whose description says what was found where, with a ``JSONSyntaxError`` as the
/// underlying error. Members the type does not know are ignored; a member missing is `keyNotFound`, `null` where a
/// value is needed `valueNotFound`, a value of the wrong kind `typeMismatch`, and a number that does not fit the
/// integer type `dataCorrupted`, each with the coding path. An integer decodes exactly, to its type's full range.
public struct JSONTextDecoder: Sendable {
    /// A decoder.
    public init() {}

    /// The `Value` in `bytes`.
    public func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws -> Value {
        try NodeDecoder.decode(type, from: try Self.node(bytes), at: .root)
    }

    /// The `Value` in `text`.
    public func decode<Value: Decodable>(_ type: Value.Type, from text: String) throws -> Value {
        try decode(type, from: Array(text.utf8))
    }

    static func node(_ bytes: [UInt8]) throws -> JSONNode {
        do {
            return try bytes.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in try JSONParser.parse(buffer) }
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "\(error)", underlyingError: error))
        }
    }
}

/// The `Decoder` over one `JSONNode`.
struct NodeDecoder: Decoder {
    let node: JSONNode
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func decode<Value: Decodable>(_ type: Value.Type, from node: JSONNode, at path: CodingPath) throws -> Value {
        // The common leaves directly; every other type through its init(from:).
        let leaf: Any? =
            switch type {
            case is String.Type: try string(node, at: path)
            case is Bool.Type: try bool(node, at: path)
            case is Int.Type: try integer(node, as: Int.self, at: path)
            case is Double.Type: try double(node, at: path)
            case is JSONValue.Type: JSONValue(node)
            default: nil
            }
        // Unwrapped first: a nil `Any?` would cast to an Optional `Value` as nil.
        if let leaf, let value = leaf as? Value { return value }
        return try Value(from: NodeDecoder(node: node, path: path))
    }

    // The leaves take their path as an autoclosure: it is built only for an error.

    static func mismatch(_ type: Any.Type, _ node: JSONNode, at path: CodingPath) -> DecodingError {
        if case .null = node {
            return .valueNotFound(
                type, .init(codingPath: path.keys, debugDescription: "expected \(type) but found null"))
        }
        return .typeMismatch(
            type, .init(codingPath: path.keys, debugDescription: "expected \(type) but found \(node.kind)"))
    }

    static func string(_ node: JSONNode, at path: @autoclosure () -> CodingPath) throws -> String {
        guard case .string(let value) = node else { throw mismatch(String.self, node, at: path()) }
        return value
    }

    static func bool(_ node: JSONNode, at path: @autoclosure () -> CodingPath) throws -> Bool {
        guard case .bool(let value) = node else { throw mismatch(Bool.self, node, at: path()) }
        return value
    }

    static func integer<Value: FixedWidthInteger>(
        _ node: JSONNode, as type: Value.Type, at path: @autoclosure () -> CodingPath
    ) throws -> Value {
        guard case .number(let text) = node else { throw mismatch(type, node, at: path()) }
        if let value = Value(text) { return value }
        // 1.0 or 1e3: an integer written as a float.
        if let value = Double(text), value.rounded() == value, let exact = Value(exactly: value) { return exact }
        throw DecodingError.dataCorrupted(
            .init(codingPath: path().keys, debugDescription: "the number \(text) does not fit in \(type)"))
    }

    static func double(_ node: JSONNode, at path: @autoclosure () -> CodingPath) throws -> Double {
        guard case .number(let text) = node else { throw mismatch(Double.self, node, at: path()) }
        guard let value = Double(text), value.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path().keys, debugDescription: "the number \(text) does not fit in Double"))
        }
        return value
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node else { throw Self.mismatch([String: Any].self, node, at: path) }
        return KeyedDecodingContainer(NodeKeyedDecoding<Key>(members: members, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = node else { throw Self.mismatch([Any].self, node, at: path) }
        return NodeUnkeyedDecoding(elements: elements, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        NodeSingleValueDecoding(node: node, path: path)
    }
}

struct NodeKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: JSONMembers
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONNode {
        guard let node = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no member '\(key.stringValue)'"))
        }
        return node
    }

    /// The member `key` unless it is absent or null: one lookup, where the protocol's default `decodeIfPresent`
    /// makes three.
    private func present(_ key: Key) -> JSONNode? {
        guard let node = members[key.stringValue] else { return nil }
        if case .null = node { return nil }
        return node
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try member(key) { return true }
        return false
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try NodeDecoder.bool(try member(key), at: path.appending(key))
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try NodeDecoder.string(try member(key), at: path.appending(key))
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try NodeDecoder.double(try member(key), at: path.appending(key))
    }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try NodeDecoder.integer(try member(key), as: type, at: path.appending(key))
    }

    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try NodeDecoder.integer(try member(key), as: type, at: path.appending(key))
    }

    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try NodeDecoder.integer(try member(key), as: type, at: path.appending(key))
    }

    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try NodeDecoder.integer(try member(key), as: type, at: path.appending(key))
    }

    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try NodeDecoder.integer(try member(key), as: type, at: path.appending(key))
    }

    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
        try NodeDecoder.decode(type, from: try member(key), at: path.appending(key))
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { try NodeDecoder.bool($0, at: path.appending(key)) }
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { try NodeDecoder.string($0, at: path.appending(key)) }
    }

    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try present(key).map { try NodeDecoder.integer($0, as: type, at: path.appending(key)) }
    }

    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try present(key).map { try NodeDecoder.integer($0, as: type, at: path.appending(key)) }
    }

    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try present(key).map { try NodeDecoder.integer($0, as: type, at: path.appending(key)) }
    }

    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try present(key).map { try NodeDecoder.integer($0, as: type, at: path.appending(key)) }
    }

    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try present(key).map { try NodeDecoder.integer($0, as: type, at: path.appending(key)) }
    }

    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { try NodeDecoder.double($0, at: path.appending(key)) }
    }

    func decodeIfPresent<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value? {
        try present(key).map { try NodeDecoder.decode(type, from: $0, at: path.appending(key)) }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try NodeDecoder(node: try member(key), path: path.appending(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try NodeDecoder(node: try member(key), path: path.appending(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(node: members["super"] ?? .null, path: path.appending(JSONIndexKey.superKey))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(node: members[key.stringValue] ?? .null, path: path.appending(key))
    }
}

struct NodeUnkeyedDecoding: UnkeyedDecodingContainer {
    let elements: [JSONNode]
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var currentIndex = 0

    init(elements: [JSONNode], path: CodingPath) {
        self.elements = elements
        self.path = path
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private var elementPath: CodingPath { .index(currentIndex, in: path) }

    private func next(_ type: Any.Type) throws -> JSONNode {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                .init(codingPath: elementPath.keys, debugDescription: "the array ends at \(elements.count) elements"))
        }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard case .null = try next(Never.self) else { return false }
        currentIndex += 1
        return true
    }

    /// The current element read by `read`, then the next.
    private mutating func take<Value>(
        _ type: Value.Type, _ read: (JSONNode, @autoclosure () -> CodingPath) throws -> Value
    ) throws -> Value {
        let value = try read(try next(type), elementPath)
        currentIndex += 1
        return value
    }

    mutating func decode(_ type: String.Type) throws -> String {
        try take(type) { try NodeDecoder.string($0, at: $1()) }
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try take(type) { try NodeDecoder.bool($0, at: $1()) } }
    mutating func decode(_ type: Int.Type) throws -> Int {
        try take(type) { try NodeDecoder.integer($0, as: type, at: $1()) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        try take(type) { try NodeDecoder.double($0, at: $1()) }
    }
    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try take(type) { try NodeDecoder.decode(type, from: $0, at: $1()) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let container = try NodeDecoder(node: try next([String: Any].self), path: elementPath).container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try NodeDecoder(node: try next([Any].self), path: elementPath).unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = NodeDecoder(node: try next(Any.self), path: elementPath)
        currentIndex += 1
        return decoder
    }
}

struct NodeSingleValueDecoding: SingleValueDecodingContainer {
    let node: JSONNode
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }

    func decodeNil() -> Bool {
        if case .null = node { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool { try NodeDecoder.bool(node, at: path) }
    func decode(_ type: String.Type) throws -> String { try NodeDecoder.string(node, at: path) }
    func decode(_ type: Double.Type) throws -> Double { try NodeDecoder.double(node, at: path) }
    func decode(_ type: Float.Type) throws -> Float { Float(try NodeDecoder.double(node, at: path)) }
    func decode(_ type: Int.Type) throws -> Int { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: Int8.Type) throws -> Int8 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: Int16.Type) throws -> Int16 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: Int32.Type) throws -> Int32 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: Int64.Type) throws -> Int64 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: UInt.Type) throws -> UInt { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try NodeDecoder.integer(node, as: type, at: path) }
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try NodeDecoder.decode(type, from: node, at: path)
    }
}
