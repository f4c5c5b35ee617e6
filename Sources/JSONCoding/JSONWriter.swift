/// `JSONNode` to JSON text: keys in UTF-8 byte order, no escaped slashes, non-ASCII as it is, control characters
/// escaped; compact, or pretty (two spaces per level, `"key": value`, empty containers as `[]` and `{}`).
struct JSONWriter {
    var output: [UInt8] = []
    let pretty: Bool
    /// The last order members were sorted in (``KeyOrder/sorted(_:)``).
    var keyOrder = KeyOrder()

    init(pretty: Bool) {
        self.pretty = pretty
    }

    mutating func write(_ node: JSONNode, level: Int = 0) {
        switch node {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): writeString(text)
        case .array(let elements): writeArray(elements, level: level)
        case .object(let members): writeObject(members.pairs, level: level)
        }
    }

    /// An array of parsed or pending values: both trees are written by these two.
    mutating func writeArray<Element: WritableNode>(_ elements: [Element], level: Int) {
        guard !elements.isEmpty else { return output.append(contentsOf: "[]".utf8) }
        output.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            newline(level + 1)
            element.write(to: &self, level: level + 1)
        }
        newline(level)
        output.append(UInt8(ascii: "]"))
    }

    /// An object's members, written with their keys sorted.
    mutating func writeObject<Value: WritableNode>(_ members: [(key: String, value: Value)], level: Int) {
        guard !members.isEmpty else { return output.append(contentsOf: "{}".utf8) }
        output.append(UInt8(ascii: "{"))
        for (index, member) in keyOrder.sorted(members).enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            newline(level + 1)
            writeString(member.key)
            output.append(UInt8(ascii: ":"))
            if pretty { output.append(UInt8(ascii: " ")) }
            member.value.write(to: &self, level: level + 1)
        }
        newline(level)
        output.append(UInt8(ascii: "}"))
    }

    mutating func newline(_ level: Int) {
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
        let appended: Void? = text.utf8.withContiguousStorageIfAvailable { appendQuoted($0, to: &output) }
        if appended == nil {
            var text = text
            text.withUTF8 { appendQuoted($0, to: &output) }
        }
    }

    /// Appends `text`, UTF-8 already (a metrics text of 12 MB, not copied into a `String` first), as a quoted JSON
    /// string literal to `output`.
    public static func append(utf8 text: [UInt8], to output: inout [UInt8]) {
        text.withUnsafeBufferPointer { appendQuoted($0, to: &output) }
    }

    /// Appends `text`, UTF-8 bytes kept elsewhere (a device's udev properties), as a quoted JSON string literal.
    public static func append(utf8 text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        appendQuoted(text, to: &output)
    }

    /// Appends `bytes` quoted, with `"`, `\\` and control characters escaped. Most strings (names, addresses, keys)
    /// need no escape and are copied whole. Otherwise the length is counted first and the text written through a
    /// pointer into room made once: a metrics text (`GetMetrics`, 12 MB at 20,000 links) has an escape every 12 bytes
    /// or so, and appending each run between two escapes to the array (its uniqueness and capacity checked each
    /// time) was most of the pass's instructions.
    private static func appendQuoted(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        let first = nextEscape(in: bytes, from: 0)
        guard first < bytes.count else {
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: bytes)
            output.append(UInt8(ascii: "\""))
            return
        }
        let start = output.count
        let count = quotedCount(bytes, firstEscape: first)
        output.append(contentsOf: repeatElement(0, count: count))
        let written = output.withUnsafeMutableBufferPointer { room in
            writeQuoted(bytes, firstEscape: first, to: room.baseAddress! + start)
        }
        precondition(written == count, "a quoted JSON string's length was miscounted")
    }

    /// The length of `bytes` as a quoted JSON string literal; its first byte that needs an escape is at `first`.
    private static func quotedCount(_ bytes: UnsafeBufferPointer<UInt8>, firstEscape first: Int) -> Int {
        var count = bytes.count + 2
        var position = first
        while position < bytes.count {
            count += shortEscape(bytes[position]) == nil ? 5 : 1
            position = nextEscape(in: bytes, from: position + 1)
        }
        return count
    }

    /// Writes `bytes` as a quoted JSON string literal at `destination`, which has room for its
    /// ``quotedCount(_:firstEscape:)`` bytes; returns how many it wrote.
    private static func writeQuoted(
        _ bytes: UnsafeBufferPointer<UInt8>, firstEscape first: Int, to destination: UnsafeMutablePointer<UInt8>
    ) -> Int {
        var out = destination
        out.pointee = UInt8(ascii: "\"")
        out += 1
        var run = 0
        var position = first
        while true {
            if position > run, let base = bytes.baseAddress {
                out.update(from: base + run, count: position - run)
                out += position - run
            }
            guard position < bytes.count else { break }
            let byte = bytes[position]
            out.pointee = UInt8(ascii: "\\")
            if let escaped = shortEscape(byte) {
                out[1] = escaped
                out += 2
            } else {
                out[1] = UInt8(ascii: "u")
                out[2] = UInt8(ascii: "0")
                out[3] = UInt8(ascii: "0")
                out[4] = hexDigits[Int(byte >> 4)]
                out[5] = hexDigits[Int(byte & 0xF)]
                out += 6
            }
            run = position + 1
            position = nextEscape(in: bytes, from: run)
        }
        out.pointee = UInt8(ascii: "\"")
        return out + 1 - destination
    }

    /// What follows the backslash for `byte` (one that needs an escape) when it has a short escape (`\n`, `\"`),
    /// or `nil` for `\u00XX`.
    private static func shortEscape(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): byte
        case 0x0A: UInt8(ascii: "n")
        case 0x0D: UInt8(ascii: "r")
        case 0x09: UInt8(ascii: "t")
        case 0x08: UInt8(ascii: "b")
        case 0x0C: UInt8(ascii: "f")
        default: nil
        }
    }

    /// The position of the first byte at or after `start` that needs an escape, or `bytes.count`: eight bytes at a
    /// time while none of them does (the escape pass of a 12 MB metrics text was 20 instructions a byte).
    private static func nextEscape(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var position = start
        if let base = bytes.baseAddress {
            let (ones, highs): (UInt64, UInt64) = (0x0101_0101_0101_0101, 0x8080_8080_8080_8080)
            while position + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self)
                // Whether a byte is below 0x20, or is '"' or '\\' (a zero byte once those are xored out): each test
                // is exact for "some byte of the word is one"; the byte loop below then finds which.
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let control = (word &- ones &* 0x20) & ~word
                let found = (control | (quote &- ones) & ~quote | (backslash &- ones) & ~backslash) & highs
                if found != 0 { break }
                position += 8
            }
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
            position += 1
        }
        return position
    }
}

extension JSONWriter {
    /// Writes a tree being encoded as it stands, without first turning it into a ``JSONNode``.
    mutating func write(_ pending: PendingNode, level: Int = 0) {
        switch pending {
        case .done(let node): write(node, level: level)
        case .deferred(let encoder): write(encoder.storage ?? .done(.object(JSONMembers([]))), level: level)
        case .array(let array): writeArray(array.elements, level: level)
        case .object(let object): writeObject(object.members, level: level)
        }
    }
}

/// A tree ``JSONWriter`` writes: parsed (``JSONNode``) or being encoded (``PendingNode``).
protocol WritableNode {
    func write(to writer: inout JSONWriter, level: Int)
}

extension JSONNode: WritableNode {
    func write(to writer: inout JSONWriter, level: Int) { writer.write(self, level: level) }
}

extension PendingNode: WritableNode {
    func write(to writer: inout JSONWriter, level: Int) { writer.write(self, level: level) }
}

/// The order the members of an object with these keys are written in, kept for the next object.
struct KeyOrder {
    var keys: [String] = []
    var order: [Int] = []

    /// `members` by their keys' UTF-8 bytes, each key once (its last value). The order worked out is kept: the
    /// objects of an array mostly have the same keys in the same order, which are then sorted once.
    mutating func sorted<Value>(_ members: [(key: String, value: Value)]) -> [(key: String, value: Value)] {
        let order: [Int]
        if keys.count == members.count, zip(keys, members).allSatisfy({ $0 == $1.key }) {
            order = self.order
        } else {
            order = members.indices.sorted { left, right in
                let (a, b) = (members[left].key, members[right].key)
                return a == b ? left < right : JSONOutput.utf8Precedes(a, b)
            }
            self = KeyOrder(keys: members.map(\.key), order: order)
        }
        var sorted: [(key: String, value: Value)] = []
        sorted.reserveCapacity(order.count)
        for index in order {
            if let last = sorted.last, last.key == members[index].key {
                sorted[sorted.count - 1] = members[index]
            } else {
                sorted.append(members[index])
            }
        }
        return sorted
    }
}
