@_exported public import JSONCoding

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
