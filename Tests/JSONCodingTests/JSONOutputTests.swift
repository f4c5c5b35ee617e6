import Foundation
import JSONCoding
import KernelTestSupport
import Testing

/// The shapes a hand-written report has: string and number members, one absent, arrays, objects with any keys.
private struct Shape: Codable, Equatable {
    var addresses: [String]
    var count: Int?
    var counts: [String: Int]
    var index: Int
    var name: String?
    var properties: [String: String]
}

@Suite("JSONOutput, the hand writer")
struct JSONOutputTests {
    /// Text with what a key or value can hold: escapes, a slash, non-ASCII, and nothing.
    private static func text(_ generator: inout SeededGenerator) -> String {
        let pieces = ["eth", "0", "\"", "\\", "/", "\n", "\u{1}", "é", "网", "🙂", "Z", "a", " ", "\t"]
        return (0..<Int.random(in: 0...5, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
            .joined()
    }

    private static func number(_ generator: inout SeededGenerator) -> Int {
        [Int.min, Int.max, 0, -1, 9, 10, -10].randomElement(using: &generator)!
            + (Bool.random(using: &generator) ? 0 : Int.random(in: -5...5, using: &generator) / 6)
    }

    @Test("members given in key order are written as the encoder writes the same value, over 1,000 random values")
    func matchesTheEncoder() throws {
        var generator = SeededGenerator(seed: 0x6f75_7470)
        for step in 0..<1_000 {
            var counts: [String: Int] = [:]
            var properties: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                counts[Self.text(&generator)] = Self.number(&generator)
                properties[Self.text(&generator)] = Self.text(&generator)
            }
            let shape = Shape(
                addresses: (0..<Int.random(in: 0...3, using: &generator)).map { _ in Self.text(&generator) },
                count: Bool.random(using: &generator) ? Self.number(&generator) : nil, counts: counts,
                index: Self.number(&generator), name: Bool.random(using: &generator) ? Self.text(&generator) : nil,
                properties: properties)
            var json = JSONOutput(capacity: 0)
            json.open("{")
            json.add("addresses", strings: shape.addresses)
            json.add("count", number: shape.count)
            json.add("counts", object: shape.counts) { $0.element($1) }
            json.add("index", number: shape.index)
            json.add("name", string: shape.name)
            json.add("properties", object: shape.properties) { $0.element($1) }
            json.close("}")
            let expected = try JSONTextEncoder().encode(shape)
            #expect(json.bytes == expected, "step \(step): \(String(decoding: json.bytes, as: UTF8.self))")
        }
    }

    @Test("keys are ordered by their UTF-8 bytes, a prefix first")
    func keyOrder() {
        var generator = SeededGenerator(seed: 0x6b65_7973)
        for _ in 0..<2_000 {
            let (a, b) = (Self.text(&generator), Self.text(&generator))
            #expect(
                JSONOutput.utf8Precedes(a, b) == Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)), "\(a) \(b)")
        }
        #expect(JSONOutput.utf8Precedes("eth", "eth0"))
        #expect(!JSONOutput.utf8Precedes("eth0", "eth0"))
        #expect(JSONOutput.utf8Precedes("Z", "a") && JSONOutput.utf8Precedes("z", "é"))
    }

    @Test("integers are written with the digits String gives them, the extremes included")
    func decimals() {
        var generator = SeededGenerator(seed: 0x6469_6769)
        let values =
            [Int.min, Int.min + 1, -100, -1, 0, 1, 9, 10, 99, 100, Int.max]
            + (0..<500).map { _ in
                Int.random(in: Int.min...Int.max, using: &generator) >> Int.random(in: 0...63, using: &generator)
            }
        for value in values {
            var output: [UInt8] = [UInt8(ascii: "x")]
            DecimalText.append(value, to: &output)
            #expect(output == Array("x\(value)".utf8))
        }
    }

    @Test("a value kept from an earlier text is copied with its comma, and startValue says where it begins")
    func keptValues() {
        var json = JSONOutput(capacity: 0)
        json.open("[")
        let first = json.startValue()
        json.element(1)
        let second = json.startValue()
        json.append(encoded: ArraySlice(#"{"a":2}"#.utf8))
        json.element("c")
        json.close("]")
        #expect(String(decoding: json.bytes, as: UTF8.self) == #"[1,{"a":2},"c"]"#)
        #expect((first, second) == (1, 3))
    }

    @Test("a UTF-8 text is escaped as the same String is")
    func utf8Text() {
        var generator = SeededGenerator(seed: 0x7465_7874)
        for _ in 0..<500 {
            let text = (0..<20).map { _ in Self.text(&generator) }.joined()
            var fromString: [UInt8] = []
            var fromBytes: [UInt8] = []
            JSONString.append(text, to: &fromString)
            JSONString.append(utf8: Array(text.utf8), to: &fromBytes)
            #expect(fromBytes == fromString)
            #expect(fromString.first == UInt8(ascii: "\"") && fromString.count >= text.utf8.count + 2)
        }
    }
}

@Suite("JSON strings escaped a word at a time")
struct JSONStringEscapeTests {
    @Test("any text, escapes dense or sparse at any offset, reads back as itself and escapes only what it must")
    func readsBack() throws {
        var generator = SeededGenerator(seed: 0x6573_6361)
        let plain = ["a", "Z", "0", " ", "/", "é", "网", "🙂", "~", "\u{7F}"]
        for step in 0..<3_000 {
            let escapeEvery = [1, 2, 3, 7, 8, 9, 16, 60, 1_000].randomElement(using: &generator)!
            var text = ""
            for _ in 0..<Int.random(in: 0...80, using: &generator) {
                if Int.random(in: 0..<escapeEvery, using: &generator) == 0 {
                    text.unicodeScalars.append(
                        [0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x08, 0x0C, 0x00, 0x01, 0x1F].map { Unicode.Scalar($0)! }
                            .randomElement(using: &generator)!)
                } else {
                    text += plain.randomElement(using: &generator)!
                }
            }
            var output: [UInt8] = []
            JSONString.append(utf8: Array(text.utf8), to: &output)
            let decoded = try JSONDecoder().decode([String].self, from: Data("[".utf8 + output + "]".utf8))
            #expect(decoded == [text], "step \(step)")
            // Nothing but the quotes, backslashes and control characters is escaped: each adds one byte, or five.
            let added = text.utf8.reduce(0) { count, byte in
                count
                    + (byte == 0x22 || byte == 0x5C || [0x0A, 0x0D, 0x09, 0x08, 0x0C].contains(byte)
                        ? 1 : byte < 0x20 ? 5 : 0)
            }
            #expect(output.count == text.utf8.count + 2 + added, "step \(step)")
        }
    }

    @Test("each of the 256 byte values, anywhere in or after an eight-byte word, is escaped exactly as JSON says")
    func everyByteEverywhere() {
        let hex = Array("0123456789abcdef".utf8)
        // What JSON requires of one byte, written byte by byte.
        func expected(_ byte: UInt8) -> [UInt8] {
            switch byte {
            case 0x22: Array(#"\""#.utf8)
            case 0x5C: Array(#"\\"#.utf8)
            case 0x0A: Array(#"\n"#.utf8)
            case 0x0D: Array(#"\r"#.utf8)
            case 0x09: Array(#"\t"#.utf8)
            case 0x08: Array(#"\b"#.utf8)
            case 0x0C: Array(#"\f"#.utf8)
            case ..<0x20:
                Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: [byte]
            }
        }
        for value in 0...255 {
            let byte = UInt8(value)
            // 21 bytes: two whole words and five after them; the byte among plain text, then between two escapes.
            for filler in [UInt8(ascii: "a"), 0x22] {
                for place in 0..<21 {
                    var text = [UInt8](repeating: filler, count: 21)
                    text[place] = byte
                    var output: [UInt8] = []
                    JSONString.append(utf8: text, to: &output)
                    let want = [0x22] + text.flatMap(expected) + [0x22]
                    #expect(output == want, "byte \(value) at \(place) among \(filler)")
                }
            }
        }
    }
}
