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
        writer.write(try NodeEncoder.node(of: value, at: []))
        return writer.output
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
        case .object(let object): .object(object.members.mapValues(\.finished))
        case .array(let array): .array(array.elements.map(\.finished))
        case .deferred(let encoder): encoder.result
        }
    }
}

final class PendingObject {
    var members: [String: PendingNode] = [:]
}

final class PendingArray {
    var elements: [PendingNode] = []
}

/// The `Encoder` that builds a `PendingNode` tree.
final class NodeEncoder: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var storage: PendingNode?

    init(codingPath: [any CodingKey]) {
        self.codingPath = codingPath
    }

    var result: JSONNode { storage?.finished ?? .object([:]) }

    static func node(of value: some Encodable, at path: [any CodingKey]) throws -> JSONNode {
        try pending(value, at: path).finished
    }

    /// `value` as a node: the common leaf types directly, others through their `encode(to:)`.
    static func pending(_ value: some Encodable, at path: [any CodingKey]) throws -> PendingNode {
        switch value {
        case let text as String: return .done(.string(text))
        case let flag as Bool: return .done(.bool(flag))
        case let number as Int: return .done(.number(String(number)))
        case let number as Double: return .done(try double(number, at: path))
        case let json as JSONValue: return .done(json.node)
        default:
            let encoder = NodeEncoder(codingPath: path)
            try value.encode(to: encoder)
            return encoder.storage ?? .done(.object([:]))
        }
    }

    static func double(_ value: Double, at path: [any CodingKey]) throws -> JSONNode {
        guard let text = JSONWriter.number(value) else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "\(value) cannot be written in JSON"))
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
        return KeyedEncodingContainer(NodeKeyedEncoding<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: PendingArray
        if case .array(let existing) = storage {
            array = existing
        } else {
            array = PendingArray()
            storage = .array(array)
        }
        return NodeUnkeyedEncoding(array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        NodeSingleValueEncoding(encoder: self)
    }
}

/// A key for an array element ("Index 3"), or for a super encoder ("super").
struct JSONIndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        self.init(index: intValue)
    }

    static let superKey = JSONIndexKey(stringValue: "super")
}

struct NodeKeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: PendingObject
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        object.members[key.stringValue] = .done(.null)
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        object.members[key.stringValue] = .done(.bool(value))
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        object.members[key.stringValue] = .done(.string(value))
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        object.members[key.stringValue] = .done(try NodeEncoder.double(value, at: codingPath + [key]))
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        object.members[key.stringValue] = .done(try NodeEncoder.double(Double(value), at: codingPath + [key]))
    }

    mutating func encode(_ value: Int, forKey key: Key) throws {
        object.members[key.stringValue] = .done(.number(String(value)))
    }

    mutating func encode(_ value: Int64, forKey key: Key) throws {
        object.members[key.stringValue] = .done(.number(String(value)))
    }

    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        object.members[key.stringValue] = .done(.number(String(value)))
    }

    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        object.members[key.stringValue] = .done(.number(String(value)))
    }

    mutating func encode(_ value: Int32, forKey key: Key) throws {
        object.members[key.stringValue] = .done(.number(String(value)))
    }

    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        object.members[key.stringValue] = try NodeEncoder.pending(value, at: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = PendingObject()
        object.members[key.stringValue] = .object(nested)
        return KeyedEncodingContainer(NodeKeyedEncoding<NestedKey>(object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = PendingArray()
        object.members[key.stringValue] = .array(nested)
        return NodeUnkeyedEncoding(array: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = NodeEncoder(codingPath: codingPath + [JSONIndexKey.superKey])
        object.members["super"] = .deferred(encoder)
        return encoder
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let encoder = NodeEncoder(codingPath: codingPath + [key])
        object.members[key.stringValue] = .deferred(encoder)
        return encoder
    }
}

struct NodeUnkeyedEncoding: UnkeyedEncodingContainer {
    let array: PendingArray
    let codingPath: [any CodingKey]
    var count: Int { array.elements.count }

    private var nextPath: [any CodingKey] { codingPath + [JSONIndexKey(index: array.elements.count)] }

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
        return KeyedEncodingContainer(NodeKeyedEncoding<NestedKey>(object: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let nested = PendingArray()
        array.elements.append(.array(nested))
        return NodeUnkeyedEncoding(array: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = NodeEncoder(codingPath: nextPath)
        array.elements.append(.deferred(encoder))
        return encoder
    }
}

struct NodeSingleValueEncoding: SingleValueEncodingContainer {
    let encoder: NodeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.storage = .done(.null) }
    mutating func encode(_ value: Bool) throws { encoder.storage = .done(.bool(value)) }
    mutating func encode(_ value: String) throws { encoder.storage = .done(.string(value)) }
    mutating func encode(_ value: Int) throws { encoder.storage = .done(.number(String(value))) }
    mutating func encode(_ value: Double) throws {
        encoder.storage = .done(try NodeEncoder.double(value, at: codingPath))
    }
    mutating func encode(_ value: Float) throws {
        encoder.storage = .done(try NodeEncoder.double(Double(value), at: codingPath))
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
        encoder.storage = try NodeEncoder.pending(value, at: codingPath)
    }
}
