/// A JSON value, Sendable and Equatable, for Varlink parameters of any shape.
public enum JSONValue: Sendable, Equatable, Codable, CustomStringConvertible {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Decodes any JSON value (from ``JSONTextDecoder`` directly; from other decoders by trying each kind).
    public init(from decoder: any Decoder) throws {
        if let decoder = decoder as? NodeDecoder {
            self.init(decoder.node)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value (an integral number under 10^15 as an integer).
    public func encode(to encoder: any Encoder) throws {
        if let encoder = encoder as? NodeEncoder {
            encoder.storage = .done(node)
            return
        }
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as compact JSON text.
    public var description: String {
        var writer = JSONWriter(pretty: false)
        writer.write(node)
        return String(decoding: writer.output, as: UTF8.self)
    }

    /// The member `key` of an object, or `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number, if this is one.
    public var numberValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The Boolean, if this is one.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// Converts an `Encodable` value (as JSON would say it, without the text in between).
    public init<Value: Encodable>(encoding value: Value) throws {
        self.init(try NodeEncoder.node(of: value, at: .root))
    }

    /// Converts to a `Decodable` type (as from JSON, without the text in between).
    public func decode<Value: Decodable>(as type: Value.Type) throws -> Value {
        try NodeDecoder.decode(type, from: node, at: .root)
    }

    init(_ node: JSONNode) {
        switch node {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        // The parser let only finite JSON numbers through, which Double reads.
        case .number(let text): self = .number(Double(text) ?? 0)
        case .string(let value): self = .string(value)
        case .array(let elements): self = .array(elements.map(JSONValue.init))
        case .object(let members):
            self = .object(Dictionary(members.pairs.map { ($0.key, JSONValue($0.value)) }, uniquingKeysWith: { $1 }))
        }
    }

    /// As the coders hold it; a non-finite number (which JSON cannot say) is `null`.
    var node: JSONNode {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 {
                .number(String(Int64(value)))
            } else {
                JSONWriter.number(value).map(JSONNode.number) ?? .null
            }
        case .string(let value): .string(value)
        case .array(let elements): .array(elements.map(\.node))
        case .object(let members): .object(JSONMembers(members.map { ($0.key, $0.value.node) }))
        }
    }
}
