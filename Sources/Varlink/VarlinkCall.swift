@_exported public import JSONCoding

/// A Varlink call: `{"method": "org.example.service.GetState", "parameters": {...}, "more": true}`.
public struct VarlinkCall: Sendable, Equatable, Codable {
    /// The fully qualified method, `interface.Method`.
    public var method: String
    /// The parameters; an omitted or `null` parameters is an empty object.
    public var parameters: [String: JSONValue]
    /// The caller wants no reply.
    public var oneway: Bool
    /// The caller accepts several replies (`continues: true` until the last).
    public var more: Bool

    /// A call.
    public init(method: String, parameters: [String: JSONValue] = [:], oneway: Bool = false, more: Bool = false) {
        self.method = method
        self.parameters = parameters
        self.oneway = oneway
        self.more = more
    }

    enum CodingKeys: String, CodingKey {
        case method, parameters, oneway, more
    }

    /// Decodes a call, accepting an omitted, `null` or empty `parameters`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        method = try container.decode(String.self, forKey: .method)
        parameters = try container.decodeIfPresent([String: JSONValue].self, forKey: .parameters) ?? [:]
        oneway = try container.decodeIfPresent(Bool.self, forKey: .oneway) ?? false
        more = try container.decodeIfPresent(Bool.self, forKey: .more) ?? false
    }

    /// Encodes the call, leaving out defaults.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(method, forKey: .method)
        if !parameters.isEmpty { try container.encode(parameters, forKey: .parameters) }
        if oneway { try container.encode(true, forKey: .oneway) }
        if more { try container.encode(true, forKey: .more) }
    }

    /// The interface part of the method (`org.example.service` of `org.example.service.GetState`): everything before
    /// the last dot, as written, so `org..example.GetState` names the interface `org..example` (which no one
    /// serves), not `org.example`.
    public var interface: String {
        method.lastIndex(of: ".").map { String(method[..<$0]) } ?? ""
    }

    /// The member part of the method (`GetState`): everything after the last dot.
    public var member: String {
        method.lastIndex(of: ".").map { String(method[method.index(after: $0)...]) } ?? method
    }
}

extension VarlinkCall {
    /// Why a message is not a call, in words a person can act on (``JSONProblem``).
    public struct NotACall: Error, Sendable, Equatable, CustomStringConvertible {
        /// The reason.
        public let description: String
    }

    /// The call in `message` (one framed message, without its NUL), as a connection reads it.
    public static func decode(_ message: [UInt8]) -> Result<VarlinkCall, NotACall> {
        do {
            return .success(try JSONTextDecoder().decode(VarlinkCall.self, from: message))
        } catch {
            return .failure(NotACall(description: JSONProblem.words(error)))
        }
    }
}
