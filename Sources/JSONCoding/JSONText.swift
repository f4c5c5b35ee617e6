/// A parsed JSON value as the coders hold it: numbers keep their text, so an `Int64` or `UInt64` beyond 2^53
/// decodes exactly.
enum JSONNode {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONNode])
    case object([String: JSONNode])

    /// The kind, for "expected a string but found an array".
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a Boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Why bytes are not JSON: what was found, and where (a byte offset from 0).
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let reason: String
    /// The offset of the first byte that is wrong.
    public let offset: Int

    /// "<reason> at byte <offset>".
    public var description: String { "\(reason) at byte \(offset)" }
}

/// RFC 8259 JSON text to `JSONNode`: one value, surrounded by optional whitespace; strings must be UTF-8 with valid
/// escapes (an unpaired surrogate is refused); arrays and objects nest at most `maximumDepth` deep, so hostile input
/// cannot exhaust the stack.
struct JSONParser {
    static let maximumDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        if parser.offset < bytes.count {
            throw parser.failure("unexpected \(parser.describeCurrent()) after the value")
        }
        return value
    }

    private func failure(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(reason: reason, offset: offset)
    }

    private func describeCurrent() -> String {
        guard offset < bytes.count else { return "end of input" }
        let byte = bytes[offset]
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    private mutating func value() throws(JSONSyntaxError) -> JSONNode {
        guard offset < bytes.count else { throw failure("unexpected end of input, expected a value") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("unexpected \(describeCurrent()), expected a value")
        }
    }

    private mutating func literal(_ word: StaticString, _ node: JSONNode) throws(JSONSyntaxError) -> JSONNode {
        let count = word.utf8CodeUnitCount
        guard offset + count <= bytes.count,
            UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[offset..<offset + count])
        else { throw failure("unexpected \(describeCurrent()), expected \(word)") }
        offset += count
        return node
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw failure("arrays and objects nested deeper than \(Self.maximumDepth)")
        }
    }

    private mutating func array() throws(JSONSyntaxError) -> JSONNode {
        try enter()
        offset += 1
        var elements: [JSONNode] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            guard offset < bytes.count else { throw failure("unexpected end of input in an array") }
            switch bytes[offset] {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"):
                offset += 1
                depth -= 1
                return .array(elements)
            default: throw failure("unexpected \(describeCurrent()) in an array, expected ',' or ']'")
            }
        }
    }

    private mutating func object() throws(JSONSyntaxError) -> JSONNode {
        try enter()
        offset += 1
        var members: [String: JSONNode] = [:]
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                throw failure("unexpected \(describeCurrent()) in an object, expected a member name")
            }
            let key = try string()
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else {
                throw failure("unexpected \(describeCurrent()) after a member name, expected ':'")
            }
            offset += 1
            skipWhitespace()
            members[key] = try value()
            skipWhitespace()
            guard offset < bytes.count else { throw failure("unexpected end of input in an object") }
            switch bytes[offset] {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"):
                offset += 1
                depth -= 1
                return .object(members)
            default: throw failure("unexpected \(describeCurrent()) in an object, expected ',' or '}'")
            }
        }
    }

    private mutating func digits() -> Int {
        let start = offset
        while offset < bytes.count, bytes[offset] >= UInt8(ascii: "0"), bytes[offset] <= UInt8(ascii: "9") {
            offset += 1
        }
        return offset - start
    }

    private mutating func number() throws(JSONSyntaxError) -> String {
        let start = offset
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        let integerStart = offset
        let integerDigits = digits()
        guard integerDigits > 0 else { throw failure("unexpected \(describeCurrent()) in a number") }
        if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") {
            offset = integerStart + 1
            throw failure("a number with a leading zero")
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw failure("unexpected \(describeCurrent()) after a decimal point") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard digits() > 0 else { throw failure("unexpected \(describeCurrent()) in an exponent") }
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        // Beyond Double's range (1e400): refused, as Foundation refuses it, rather than read as infinity.
        guard Double(text)?.isFinite == true else {
            offset = start
            throw failure("a number beyond the range of a double")
        }
        return text
    }

    /// A string starting at the opening quote; leaves `offset` after the closing one.
    private mutating func string() throws(JSONSyntaxError) -> String {
        offset += 1
        let start = offset
        // The common case: no escapes.
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: bytes[start..<offset], as: UTF8.self) else {
                    offset = start
                    throw failure("a string that is not UTF-8")
                }
                offset += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("a control character (0x\(String(byte, radix: 16))) in a string") }
            offset += 1
        }
        var decoded = Array(bytes[start..<offset])
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else {
                    offset = start
                    throw failure("a string that is not UTF-8")
                }
                offset += 1
                return text
            case UInt8(ascii: "\\"):
                offset += 1
                try escape(into: &decoded)
            case 0..<0x20:
                throw failure("a control character (0x\(String(byte, radix: 16))) in a string")
            default:
                decoded.append(byte)
                offset += 1
            }
        }
        throw failure("unexpected end of input in a string")
    }

    private mutating func escape(into decoded: inout [UInt8]) throws(JSONSyntaxError) {
        guard offset < bytes.count else { throw failure("unexpected end of input in an escape") }
        let byte = bytes[offset]
        offset += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hexQuad())
            if scalar >= 0xD800 && scalar < 0xDC00 {
                guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"),
                    bytes[offset + 1] == UInt8(ascii: "u")
                else { throw failure("an unpaired surrogate escape") }
                offset += 2
                let low = UInt32(try hexQuad())
                guard low >= 0xDC00 && low < 0xE000 else { throw failure("an unpaired surrogate escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00 && scalar < 0xE000 {
                throw failure("an unpaired surrogate escape")
            }
            // Every value here is a scalar: surrogates were paired or refused above.
            decoded.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar)!)!)
        default:
            offset -= 1
            throw failure("an unknown escape '\\\(describeCurrent())'")
        }
    }

    private mutating func hexQuad() throws(JSONSyntaxError) -> UInt16 {
        guard offset + 4 <= bytes.count else { throw failure("unexpected end of input in a \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("unexpected \(describeCurrent()) in a \\u escape")
            }
            value = value << 4 | UInt16(digit)
            offset += 1
        }
        return value
    }
}

/// `JSONNode` to JSON text: keys in UTF-8 byte order, no escaped slashes, non-ASCII as it is, control characters
/// escaped; compact, or pretty (two spaces per level, `"key": value`, empty containers as `[]` and `{}`).
struct JSONWriter {
    var output: [UInt8] = []
    let pretty: Bool

    init(pretty: Bool) {
        self.pretty = pretty
    }

    mutating func write(_ node: JSONNode, level: Int = 0) {
        switch node {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): writeString(text)
        case .array(let elements):
            guard !elements.isEmpty else { return output.append(contentsOf: "[]".utf8) }
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                newline(level + 1)
                write(element, level: level + 1)
            }
            newline(level)
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else { return output.append(contentsOf: "{}".utf8) }
            output.append(UInt8(ascii: "{"))
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                newline(level + 1)
                writeString(member.key)
                output.append(UInt8(ascii: ":"))
                if pretty { output.append(UInt8(ascii: " ")) }
                write(member.value, level: level + 1)
            }
            newline(level)
            output.append(UInt8(ascii: "}"))
        }
    }

    private mutating func newline(_ level: Int) {
        guard pretty else { return }
        output.append(0x0A)
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
    }

    mutating func writeString(_ text: String) {
        JSONString.append(text, to: &output)
    }

    /// A finite `Double` as JSON: Swift's shortest representation that reads back the same, without a trailing
    /// ".0" (as Foundation's encoder writes it); `nil` for infinities and NaN, which JSON cannot say.
    static func number(_ value: Double) -> String? {
        guard value.isFinite else { return nil }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }
}

/// JSON string literals as this module writes them, for code that writes JSON text by hand on a hot path (a hook's
/// `NETDEVD_JSON`): `"`, `\\` and control characters escaped, `/` and non-ASCII as they are. The same bytes as
/// ``JSONTextEncoder``'s strings.
public enum JSONString {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `text` as a quoted JSON string literal to `output`.
    public static func append(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            let escaped: UInt8
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): escaped = byte
            case 0x0A: escaped = UInt8(ascii: "n")
            case 0x0D: escaped = UInt8(ascii: "r")
            case 0x09: escaped = UInt8(ascii: "t")
            case 0x08: escaped = UInt8(ascii: "b")
            case 0x0C: escaped = UInt8(ascii: "f")
            case 0..<0x20:
                output.append(contentsOf: "\\u00".utf8)
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0xF)])
                continue
            default:
                output.append(byte)
                continue
            }
            output.append(UInt8(ascii: "\\"))
            output.append(escaped)
        }
        output.append(UInt8(ascii: "\""))
    }
}
