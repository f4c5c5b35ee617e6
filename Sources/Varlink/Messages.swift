@_exported public import JSONCoding

/// A Varlink call: `{"method": "io.netdevd.GetState", "parameters": {...}, "more": true}`.
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

    /// The interface part of the method (`io.netdevd` of `io.netdevd.GetState`): everything before the last dot,
    /// as written, so `io..netdevd.GetState` names the interface `io..netdevd` (which no one serves), not
    /// `io.netdevd`.
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

/// The errors of `org.varlink.service`, which every Varlink service answers with.
public enum VarlinkStandardError {
    /// The interface is not served here.
    public static let interfaceNotFound = "org.varlink.service.InterfaceNotFound"
    /// The interface has no such method.
    public static let methodNotFound = "org.varlink.service.MethodNotFound"
    /// The method exists but is not implemented.
    public static let methodNotImplemented = "org.varlink.service.MethodNotImplemented"
    /// A parameter is missing or of the wrong type.
    public static let invalidParameter = "org.varlink.service.InvalidParameter"
    /// The call needs more rights.
    public static let permissionDenied = "org.varlink.service.PermissionDenied"
    /// The call needs `more`.
    public static let expectedMore = "org.varlink.service.ExpectedMore"
}

/// NUL-terminated framing: splits a byte stream into messages, and encodes one.
public struct VarlinkFraming: Sendable {
    /// The longest message accepted.
    public let maximumMessageBytes: Int
    private var buffer: [UInt8] = []

    /// A framer that refuses messages longer than `maximumMessageBytes`.
    public init(maximumMessageBytes: Int) {
        self.maximumMessageBytes = maximumMessageBytes
    }

    /// Why the stream cannot go on.
    public enum Failure: Error, Equatable {
        /// A message grew past the limit before its NUL.
        case messageTooLong(Int)
    }

    /// Adds received bytes; returns the complete messages (without their NUL). Only the new bytes are searched, and
    /// the buffer is shifted once per call, so many small messages in one read cost time in proportion to their size.
    public mutating func append(_ bytes: some Collection<UInt8>) throws(Failure) -> [[UInt8]] {
        var searchFrom = buffer.count
        buffer.append(contentsOf: bytes)
        var messages: [[UInt8]] = []
        var start = 0
        while let end = buffer[searchFrom...].firstIndex(of: 0) {
            messages.append(Array(buffer[start..<end]))
            start = end + 1
            searchFrom = start
        }
        if start > 0 {
            buffer.removeSubrange(..<start)
        }
        if buffer.count > maximumMessageBytes {
            throw .messageTooLong(buffer.count)
        }
        return messages
    }

    /// The bytes of `value` as JSON, NUL-terminated.
    public static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        var bytes = try JSONTextEncoder().encode(value)
        bytes.append(0)
        return bytes
    }
}

/// A JSON decoding failure in words a person can act on ("invalid JSON: ...", "no 'method'", "unexpected value at
/// parameters.index"), for the messages of whoever refuses the input: a Varlink message, a recording's line.
public enum JSONProblem {
    /// `error` (from ``JSONTextDecoder``) in words.
    public static func words(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): "invalid JSON: \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, _): "no '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "unexpected value at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: "\(error)"
        }
    }
}
