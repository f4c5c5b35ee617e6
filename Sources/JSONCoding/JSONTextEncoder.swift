/// Encodes `Encodable` values as JSON text, without Foundation: object keys sorted (by their UTF-8 bytes, so the
/// same value always gives the same bytes), slashes not escaped, compact or pretty-printed.
///
/// Integers are written exactly; a `Double` or `Float` as the shortest text that reads back the same, without a
/// trailing `.0`. A non-finite floating-point value cannot be said in JSON and is an `EncodingError.invalidValue`
/// naming where it was. A value that encodes nothing is `{}`.
public struct JSONTextEncoder: Sendable {
    /// Two spaces per level, a member or element per line, `"key": value`.
    public var prettyPrinted: Bool

    /// An encoder; compact unless `prettyPrinted`.
    public init(prettyPrinted: Bool = false) {
        self.prettyPrinted = prettyPrinted
    }

    /// The JSON text of `value`, as UTF-8.
    public func encode(_ value: some Encodable) throws -> [UInt8] {
        var writer = JSONWriter(pretty: prettyPrinted)
        writer.write(try NodeEncoder.pending(value, at: .root))
        return writer.output
    }

    /// Appends the JSON text of `value` to `output`, for a caller that splices texts it kept with new ones (netdevd
    /// rebuilding a reply for the links that changed). When encoding fails, `output` is left as it was.
    public func encode(_ value: some Encodable, appendingTo output: inout [UInt8]) throws {
        let pending = try NodeEncoder.pending(value, at: .root)
        var writer = JSONWriter(pretty: prettyPrinted)
        swap(&writer.output, &output)
        writer.write(pending)
        swap(&writer.output, &output)
    }

    /// The JSON text of `value`.
    public func encodeToString(_ value: some Encodable) throws -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }
}

/// A node being built: containers are objects so that nested containers and super encoders can fill them after
/// they were put in place.
enum PendingNode {
    case done(JSONNode)
    case object(PendingObject)
    case array(PendingArray)
    /// A super encoder's value, read when the tree is finished.
    case deferred(NodeEncoder)

    var finished: JSONNode {
        switch self {
        case .done(let node): node
        case .object(let object):
            .object(JSONMembers(object.members.map { ($0.key, $0.value.finished) }))
        case .array(let array): .array(array.elements.map(\.finished))
        case .deferred(let encoder): encoder.result
        }
    }
}

/// An object's members in the order they were encoded (a key encoded twice: the last counts), kept as a list: the
/// text needs them sorted anyway, and hashing each key into a dictionary first cost more than the sort.
final class PendingObject {
    var members: [(key: String, value: PendingNode)] = []
}

final class PendingArray {
    var elements: [PendingNode] = []
}

/// The `Encoder` that builds a `PendingNode` tree.
final class NodeEncoder: Encoder {
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var storage: PendingNode?

    init(path: CodingPath) {
        self.path = path
    }

    var result: JSONNode { storage?.finished ?? .object(JSONMembers([])) }

    static func node(of value: some Encodable, at path: CodingPath) throws -> JSONNode {
        try pending(value, at: path).finished
    }

    /// `value` as a node: the common leaf types directly (their path is built only for an error), others through
    /// their `encode(to:)`.
    static func pending<Value: Encodable>(
        _ value: Value, at path: @autoclosure () -> CodingPath
    ) throws -> PendingNode {
        // Compared as types first: a failed dynamic cast costs far more than comparing two metadata pointers, and
        // most values that come here are structs and arrays.
        if Value.self == String.self, let text = value as? String { return .done(.string(text)) }
        if Value.self == Int.self, let number = value as? Int { return .done(.number(String(number))) }
        if Value.self == Bool.self, let flag = value as? Bool { return .done(.bool(flag)) }
        if Value.self == Double.self, let number = value as? Double { return .done(try double(number, at: path())) }
        if Value.self == JSONValue.self, let json = value as? JSONValue { return .done(json.node) }
        let encoder = NodeEncoder(path: path())
        try value.encode(to: encoder)
        return encoder.storage ?? .done(.object(JSONMembers([])))
    }

    static func double(_ value: Double, at path: @autoclosure () -> CodingPath) throws -> JSONNode {
        guard let text = JSONWriter.number(value) else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path().keys, debugDescription: "\(value) cannot be written in JSON"))
        }
        return .number(text)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: PendingObject
        if case .object(let existing) = storage {
            object = existing
        } else {
            object = PendingObject()
            storage = .object(object)
        }
        return KeyedEncodingContainer(NodeKeyedEncoding<Key>(object: object, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: PendingArray
        if case .array(let existing) = storage {
            array = existing
        } else {
            array = PendingArray()
            storage = .array(array)
        }
        return NodeUnkeyedEncoding(array: array, path: path)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        NodeSingleValueEncoding(encoder: self)
    }
}

struct NodeKeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: PendingObject
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }

    mutating func encodeNil(forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.null)))
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.bool(value))))
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.string(value))))
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(try NodeEncoder.double(value, at: path.appending(key)))))
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(try NodeEncoder.double(Double(value), at: path.appending(key)))))
    }

    mutating func encode(_ value: Int, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.number(String(value)))))
    }

    mutating func encode(_ value: Int64, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.number(String(value)))))
    }

    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.number(String(value)))))
    }

    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.number(String(value)))))
    }

    mutating func encode(_ value: Int32, forKey key: Key) throws {
        object.members.append((key.stringValue, .done(.number(String(value)))))
    }

    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        object.members.append((key.stringValue, try NodeEncoder.pending(value, at: path.appending(key))))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = PendingObject()
        object.members.append((key.stringValue, .object(nested)))
        return KeyedEncodingContainer(NodeKeyedEncoding<NestedKey>(object: nested, path: path.appending(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = PendingArray()
        object.members.append((key.stringValue, .array(nested)))
        return NodeUnkeyedEncoding(array: nested, path: path.appending(key))
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = NodeEncoder(path: path.appending(JSONIndexKey.superKey))
        object.members.append(("super", .deferred(encoder)))
        return encoder
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let encoder = NodeEncoder(path: path.appending(key))
        object.members.append((key.stringValue, .deferred(encoder)))
        return encoder
    }
}

struct NodeUnkeyedEncoding: UnkeyedEncodingContainer {
    let array: PendingArray
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var count: Int { array.elements.count }

    private var nextPath: CodingPath { .index(array.elements.count, in: path) }

    mutating func encodeNil() throws { array.elements.append(.done(.null)) }
    mutating func encode(_ value: Bool) throws { array.elements.append(.done(.bool(value))) }
    mutating func encode(_ value: String) throws { array.elements.append(.done(.string(value))) }
    mutating func encode(_ value: Int) throws { array.elements.append(.done(.number(String(value)))) }
    mutating func encode(_ value: Double) throws {
        array.elements.append(.done(try NodeEncoder.double(value, at: nextPath)))
    }
    mutating func encode(_ value: some Encodable) throws {
        array.elements.append(try NodeEncoder.pending(value, at: nextPath))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        let nested = PendingObject()
        array.elements.append(.object(nested))
        return KeyedEncodingContainer(NodeKeyedEncoding<NestedKey>(object: nested, path: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let nested = PendingArray()
        array.elements.append(.array(nested))
        return NodeUnkeyedEncoding(array: nested, path: path)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = NodeEncoder(path: nextPath)
        array.elements.append(.deferred(encoder))
        return encoder
    }
}

struct NodeSingleValueEncoding: SingleValueEncodingContainer {
    let encoder: NodeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }
    private var path: CodingPath { encoder.path }

    mutating func encodeNil() throws { encoder.storage = .done(.null) }
    mutating func encode(_ value: Bool) throws { encoder.storage = .done(.bool(value)) }
    mutating func encode(_ value: String) throws { encoder.storage = .done(.string(value)) }
    mutating func encode(_ value: Int) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: Double) throws {
        encoder.storage = .done(try NodeEncoder.double(value, at: path))
    }
    mutating func encode(_ value: Float) throws {
        encoder.storage = .done(try NodeEncoder.double(Double(value), at: path))
    }
    mutating func encode(_ value: Int8) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { encoder.storage = .done(.number(String(value))) }
    // Every leaf type has its overload above: the standard library's leaves encode themselves through this
    // container, so the generic one below only ever sees composite values (no recursion back to a leaf).
    mutating func encode(_ value: some Encodable) throws {
        encoder.storage = try NodeEncoder.pending(value, at: path)
    }
}
