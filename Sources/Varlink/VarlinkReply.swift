@_exported public import JSONCoding

/// A Varlink reply: parameters, or an error name with parameters; `continues` while more replies follow.
public struct VarlinkReply: Sendable, Equatable, Codable {
    /// The reply's parameters.
    public var parameters: [String: JSONValue]
    /// More replies follow (only for calls with `more`).
    public var continues: Bool
    /// An error's fully qualified name, or `nil` for success.
    public var error: String?

    /// A reply.
    public init(parameters: [String: JSONValue] = [:], continues: Bool = false, error: String? = nil) {
        self.parameters = parameters
        self.continues = continues
        self.error = error
    }

    enum CodingKeys: String, CodingKey {
        case parameters, continues, error
    }

    /// Decodes a reply, accepting omitted members.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        parameters = try container.decodeIfPresent([String: JSONValue].self, forKey: .parameters) ?? [:]
        continues = try container.decodeIfPresent(Bool.self, forKey: .continues) ?? false
        error = try container.decodeIfPresent(String.self, forKey: .error)
    }

    /// Encodes the reply, leaving out defaults.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(parameters, forKey: .parameters)
        if continues { try container.encode(true, forKey: .continues) }
        if let error { try container.encode(error, forKey: .error) }
    }
}
