import Foundation
import KernelTestSupport
import SystemSupport
import Testing

@Suite("A device's properties in one buffer")
struct DevicePropertiesTests {
    /// A key or value: empty, short, non-ASCII, or long enough that its length takes two or three bytes.
    private static func text(_ generator: inout SeededGenerator) -> String {
        let length = [0, 1, 5, 15, 16, 127, 128, 300, 20_000].randomElement(using: &generator)!
        let pieces = ["A", "_", "é", "网", "🙂", "=", "\n", "0"]
        var text = ""
        while text.utf8.count < length { text += pieces.randomElement(using: &generator)! }
        return text
    }

    private static func dictionary(_ generator: inout SeededGenerator) -> [String: String] {
        var dictionary: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...12, using: &generator) {
            dictionary[text(&generator)] = text(&generator)
        }
        return dictionary
    }

    @Test("it holds its dictionary's pairs in the keys' UTF-8 order, found by key, read as bytes; 500 random sets")
    func holdsTheDictionary() throws {
        var generator = SeededGenerator(seed: 0x7072_6f70)
        for step in 0..<500 {
            let dictionary = Self.dictionary(&generator)
            let properties = DeviceProperties(dictionary)
            #expect(properties.dictionary == dictionary, "step \(step)")
            let keys = properties.map(\.key)
            #expect(keys == dictionary.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, "step \(step)")
            #expect(properties.keys == keys, "step \(step)")
            // The bytes a writer copies: the same pairs, in the same order.
            var read: [(String, String)] = []
            properties.forEachUTF8 { key, value in
                read.append((String(decoding: key, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            }
            #expect(read.map(\.0) == keys && read.map(\.1) == properties.map(\.value), "step \(step)")
            for (key, value) in dictionary { #expect(properties[key] == value, "step \(step)") }
            let missing = Self.text(&generator) + "?"
            #expect(properties[missing] == nil)
            #expect(properties.isEmpty == dictionary.isEmpty)
            let coded = try JSONDecoder().decode(DeviceProperties.self, from: JSONEncoder().encode(properties))
            #expect(coded == properties)
        }
    }

    @Test("two are equal exactly when their dictionaries are; setting a value changes only that one")
    func equalityAndChange() {
        var generator = SeededGenerator(seed: 0x6571_7561)
        for _ in 0..<300 {
            let (a, b) = (Self.dictionary(&generator), Self.dictionary(&generator))
            #expect((DeviceProperties(a) == DeviceProperties(b)) == (a == b))
            var changed = DeviceProperties(a)
            let key = a.keys.randomElement(using: &generator) ?? "NEW"
            changed[key] = "value"
            var expected = a
            expected[key] = "value"
            #expect(changed == DeviceProperties(expected))
            changed[key] = nil
            expected[key] = nil
            #expect(changed.dictionary == expected)
        }
        let literal: DeviceProperties = ["IFINDEX": "7", "INTERFACE": "veth7"]
        #expect(literal["IFINDEX"] == "7" && literal["INTERFACE"] == "veth7" && literal["IFINDE"] == nil)
    }

    @Test("made from a list in any order, as libudev lists them, a key given twice keeps its last value")
    func fromPairs() {
        var generator = SeededGenerator(seed: 0x7061_6972)
        for step in 0..<300 {
            var list: [(String, String)] = []
            for _ in 0..<Int.random(in: 0...12, using: &generator) {
                let key =
                    Bool.random(using: &generator) && !list.isEmpty
                    ? list.randomElement(using: &generator)!.0 : Self.text(&generator)
                list.append((key, Self.text(&generator)))
            }
            let properties = DeviceProperties(list: list)
            #expect(properties == DeviceProperties(Dictionary(list, uniquingKeysWith: { $1 })), "step \(step)")
        }
    }
}
