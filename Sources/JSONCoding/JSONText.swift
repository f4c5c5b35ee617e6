// Sendable said, not inferred: inferring it through JSONMembers, which holds JSONNodes, made an incremental debug
// build of this module fail with "circular reference" whenever one file was compiled without the others.

/// A parsed JSON value as the coders hold it: numbers keep their text, so an `Int64` or `UInt64` beyond 2^53
/// decodes exactly.
enum JSONNode: Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONNode])
    case object(JSONMembers)

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

/// An object's members in the order the text or the encoder gave them; a key given twice counts with its last
/// value. Kept as a list: building a dictionary for every object of a `ListLinks` reply (20,000 objects of 8
/// members) cost more than parsing the text, and finding one of a dozen keys by comparing them is cheaper than
/// hashing it. A large object (a hostile client's, or a map) is indexed once, so a lookup never scans it whole.
struct JSONMembers: Sendable {
    private(set) var pairs: [(key: String, value: JSONNode)]
    /// Each key's last position, for objects larger than ``JSONMembers/scanned``.
    private let index: [String: Int]?
    /// Up to this many members a lookup compares keys; above, it hashes.
    static let scanned = 16

    init(_ pairs: [(key: String, value: JSONNode)]) {
        self.pairs = pairs
        if pairs.count > Self.scanned {
            var index: [String: Int] = [:]
            index.reserveCapacity(pairs.count)
            for (position, pair) in pairs.enumerated() { index[pair.key] = position }
            self.index = index
        } else {
            index = nil
        }
    }

    var isEmpty: Bool { pairs.isEmpty }

    /// The value of `key` (its last, if given more than once).
    subscript(key: String) -> JSONNode? {
        if let index { return index[key].map { pairs[$0].value } }
        return pairs.last { $0.key == key }?.value
    }

    /// Every key once, in the order they came.
    var keys: [String] {
        var seen = Set<String>()
        return pairs.compactMap { seen.insert($0.key).inserted ? $0.key : nil }
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
        var members: [(key: String, value: JSONNode)] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return .object(JSONMembers(members))
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
            members.append((key, try value()))
            skipWhitespace()
            guard offset < bytes.count else { throw failure("unexpected end of input in an object") }
            switch bytes[offset] {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"):
                offset += 1
                depth -= 1
                return .object(JSONMembers(members))
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
        var ascii = true
        // The common case: no escapes.
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                if ascii {
                    // ASCII is UTF-8 already: no validation to do.
                    offset += 1
                    return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<offset - 1]), as: UTF8.self)
                }
                guard let text = String(validating: bytes[start..<offset], as: UTF8.self) else {
                    offset = start
                    throw failure("a string that is not UTF-8")
                }
                offset += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("a control character (0x\(String(byte, radix: 16))) in a string") }
            if byte >= 0x80 { ascii = false }
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
