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

    /// Appends `text`, valid UTF-8 already (a metrics text of 12 MB, made from strings, not copied into a `String`
    /// first), as a quoted JSON string literal to `output`.
    public static func append(utf8 text: [UInt8], to output: inout [UInt8]) {
        text.withUnsafeBufferPointer { appendQuoted($0, to: &output) }
    }

    /// Appends `text`, valid UTF-8 bytes kept elsewhere (a device's udev properties, repaired where they were not
    /// when they were kept), as a quoted JSON string literal.
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
        forEachEscape(in: bytes, from: first) { position in
            count += shortEscape(bytes[position]) == nil ? 5 : 1
        }
        return count
    }

    /// Writes `bytes` as a quoted JSON string literal at `destination`, which has room for its
    /// ``quotedCount(_:firstEscape:)`` bytes; returns how many it wrote. Eight bytes at a time: each word is stored
    /// whole, then the writer moves past the bytes before its first escape, writes the escape, and goes on from the
    /// byte after it (a metrics text has an escape every 12 bytes or so, and copying each run between two with
    /// `memmove` cost more than the rest). A store never reaches past the end: the eight bytes stored are yet to be
    /// written, and each takes at least one byte.
    private static func writeQuoted(
        _ bytes: UnsafeBufferPointer<UInt8>, firstEscape first: Int, to destination: UnsafeMutablePointer<UInt8>
    ) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        destination.pointee = UInt8(ascii: "\"")
        destination.advanced(by: 1).update(from: base, count: first)
        var out = destination + 1 + first
        var position = first
        while position < bytes.count {
            if position + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self)
                let found = escapeMask(word)
                UnsafeMutableRawPointer(out).storeBytes(of: word, as: UInt64.self)
                guard found != 0 else {
                    out += 8
                    position += 8
                    continue
                }
                let plain = found.trailingZeroBitCount / 8
                out += plain
                position += plain
            } else if !needsEscape(bytes[position]) {
                out.pointee = bytes[position]
                out += 1
                position += 1
                continue
            }
            out += writeEscape(bytes[position], to: out)
            position += 1
        }
        out.pointee = UInt8(ascii: "\"")
        return out + 1 - destination
    }

    /// Writes the escape of `byte` (one that needs an escape) at `out`; returns its length, 2 or 6.
    @inline(__always)
    private static func writeEscape(_ byte: UInt8, to out: UnsafeMutablePointer<UInt8>) -> Int {
        out.pointee = UInt8(ascii: "\\")
        if let escaped = shortEscape(byte) {
            out[1] = escaped
            return 2
        }
        out[1] = UInt8(ascii: "u")
        out[2] = UInt8(ascii: "0")
        out[3] = UInt8(ascii: "0")
        out[4] = hexDigits[Int(byte >> 4)]
        out[5] = hexDigits[Int(byte & 0xF)]
        return 6
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

    /// The position of the first byte at or after `start` that needs an escape, or `bytes.count`.
    private static func nextEscape(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var position = start
        if let base = bytes.baseAddress {
            while position + 8 <= bytes.count {
                let found = escapeMask(UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
                if found != 0 { return position + found.trailingZeroBitCount / 8 }
                position += 8
            }
        }
        while position < bytes.count && !needsEscape(bytes[position]) { position += 1 }
        return position
    }

    /// Calls `body` with the position of each byte at or after `start` that needs an escape, in order: eight bytes
    /// at a time, each found from its word's mask without a byte loop (a metrics text has one every 12 bytes or so;
    /// finding each by scanning from the last took 20 instructions a byte).
    @inline(__always)
    private static func forEachEscape(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ body: (Int) -> Void) {
        var position = start
        if let base = bytes.baseAddress {
            while position + 8 <= bytes.count {
                var found = escapeMask(UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
                while found != 0 {
                    body(position + found.trailingZeroBitCount / 8)
                    found &= found - 1
                }
                position += 8
            }
        }
        while position < bytes.count {
            if needsEscape(bytes[position]) { body(position) }
            position += 1
        }
    }

    /// The high bit of each byte of `word` (eight bytes of text as loaded on a little-endian machine, the first in
    /// the low byte) that needs an escape: below 0x20, `"` or `\\`. Exact for every byte: each test adds 7-bit values
    /// that cannot carry into the next byte.
    @inline(__always)
    private static func escapeMask(_ word: UInt64) -> UInt64 {
        let (ones, low7, highs): (UInt64, UInt64, UInt64) =
            (0x0101_0101_0101_0101, 0x7F7F_7F7F_7F7F_7F7F, 0x8080_8080_8080_8080)
        let word = UInt64(littleEndian: word)
        // The high bit set where the byte is 0x20 or more.
        let printable = ((word & low7) &+ ones &* 0x60) | word
        // The high bit set where the byte of `bits` is not zero.
        func nonZero(_ bits: UInt64) -> UInt64 { ((bits & low7) &+ low7) | bits }
        let quote = nonZero(word ^ ones &* 0x22)
        let backslash = nonZero(word ^ ones &* 0x5C)
        return ~(printable & quote & backslash) & highs
    }

    /// Whether `byte` needs an escape in a JSON string.
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
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
