import Foundation
import JSONCoding
import Testing

/// A report with the shapes netdevd sends: nested, optional, every integer width, a dictionary.
struct Sample: Codable, Equatable {
    var name: String
    var index: Int32
    var bytes: UInt64
    var delta: Int64
    var small: Int8
    var flag: Bool
    var ratio: Double
    var mtu: Int?
    var tags: [String]
    var properties: [String: String]
    var children: [Sample]
}

/// Encodes through `superEncoder`, which few types use but the coder must support.
final class Base: Codable {
    var id = 1
}

/// A subclass that puts its base under "super".
final class Derived: Codable {
    var base = Base()
    var extra = "x"

    init() {}

    enum CodingKeys: String, CodingKey { case extra }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        extra = try container.decode(String.self, forKey: .extra)
        base = try Base(from: container.superDecoder())
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(extra, forKey: .extra)
        try base.encode(to: container.superEncoder())
    }
}

@Suite("JSON coding without Foundation")
struct JSONCodingTests {
    let sample = Sample(
        name: "eth0 \"quoted\" \\ /slash\n\u{1}é😀", index: -7, bytes: UInt64.max, delta: Int64.min, small: -128,
        flag: true, ratio: 0.1, mtu: nil, tags: ["a", ""], properties: ["b": "2", "a": "1", "B": "3"],
        children: [
            Sample(
                name: "c", index: 1, bytes: 0, delta: 0, small: 0, flag: false, ratio: 1e300, mtu: 1500, tags: [],
                properties: [:], children: [])
        ])

    @Test("a value reads back equal, integers exact over their whole range, and Foundation reads the same value")
    func roundTrip() throws {
        let bytes = try JSONTextEncoder().encode(sample)
        #expect(try JSONTextDecoder().decode(Sample.self, from: bytes) == sample)
        #expect(try JSONDecoder().decode(Sample.self, from: Data(bytes)) == sample)
        let foundation = try JSONEncoder().encode(sample)
        #expect(try JSONTextDecoder().decode(Sample.self, from: [UInt8](foundation)) == sample)
    }

    @Test("keys sorted by their bytes, slashes as they are, control characters escaped, nil members left out")
    func text() throws {
        let text = try JSONTextEncoder().encodeToString(
            Sample(
                name: "a/b\t\u{1F}", index: 1, bytes: 2, delta: -3, small: 4, flag: false, ratio: 2.5, mtu: nil,
                tags: [], properties: ["b": "", "B": "", "a": ""], children: []))
        #expect(
            text == #"{"bytes":2,"children":[],"delta":-3,"flag":false,"index":1,"name":"a/b\t\u001f","#
                + #""properties":{"B":"","a":"","b":""},"ratio":2.5,"small":4,"tags":[]}"#)
        #expect(
            try JSONTextEncoder().encodeToString([1.0, 0.5, -0.0, 1e-7, 123456789012.0])
                == "[1,0.5,-0,1e-07,123456789012]")
    }

    @Test("pretty output: two spaces per level, \"key\": value, empty containers closed on their line")
    func pretty() throws {
        let value: [String: JSONValue] = [
            "list": .array([.number(1), .object([:])]), "empty": .array([]), "s": .string("x"),
        ]
        let text = try JSONTextEncoder(prettyPrinted: true).encodeToString(value)
        #expect(text == "{\n  \"empty\": [],\n  \"list\": [\n    1,\n    {}\n  ],\n  \"s\": \"x\"\n}")
    }

    @Test("infinity and NaN cannot be said in JSON: an error naming where")
    func nonFinite() {
        #expect(throws: EncodingError.self) { try JSONTextEncoder().encode(["x": Double.infinity]) }
        do {
            _ = try JSONTextEncoder().encode(["a": [1.0, .nan]])
            Issue.record("NaN was encoded")
        } catch EncodingError.invalidValue(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["a", "Index 1"])
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("super encoders and decoders put the base under \"super\"")
    func superCoders() throws {
        let text = try JSONTextEncoder().encodeToString(Derived())
        #expect(text == #"{"extra":"x","super":{"id":1}}"#)
        #expect(try JSONTextDecoder().decode(Derived.self, from: text).base.id == 1)
    }

    @Test("strings: escapes, surrogate pairs, UTF-8 kept; unpaired surrogates and bad UTF-8 refused")
    func strings() throws {
        let decoder = JSONTextDecoder()
        #expect(
            try decoder.decode(String.self, from: #""a\/b\"\\\b\f\n\r\t\u00e9\ud83d\ude00é""#)
                == "a/b\"\\\u{8}\u{C}\n\r\té😀é")
        for bad in [#""\ud83d""#, #""\ude00x""#, #""\x""#, "\"a\u{1}\"", #""abc"#] {
            #expect(throws: DecodingError.self, "\(bad)") { try decoder.decode(String.self, from: bad) }
        }
        #expect(throws: DecodingError.self) { try decoder.decode(String.self, from: [0x22, 0xFF, 0x22]) }
    }

    @Test("syntax errors say what and where; nesting deeper than 512 is refused, not a crash")
    func syntax() throws {
        func problem(_ text: String) -> String? {
            do {
                _ = try JSONTextDecoder().decode(JSONValue.self, from: text)
                return nil
            } catch DecodingError.dataCorrupted(let context) {
                return context.debugDescription
            } catch {
                return "\(error)"
            }
        }
        #expect(problem(#"{"a":1,}"#) == "unexpected '}' in an object, expected a member name at byte 7")
        #expect(problem("[1 2]") == "unexpected '2' in an array, expected ',' or ']' at byte 3")
        #expect(problem("01") == "a number with a leading zero at byte 1")
        #expect(problem("1.") == "unexpected end of input after a decimal point at byte 2")
        #expect(problem("nul") == "unexpected 'n', expected null at byte 0")
        #expect(problem("[1e400]") == "a number beyond the range of a double at byte 1")
        #expect(problem("") == "unexpected end of input, expected a value at byte 0")
        #expect(problem("{} x") == "unexpected 'x' after the value at byte 3")
        #expect(problem(String(repeating: "[", count: 512) + String(repeating: "]", count: 512)) == nil)
        #expect(
            problem(String(repeating: "[", count: 100_000))
                == "arrays and objects nested deeper than 512 at byte 512")
        for valid in ["-0", "1e5", "1E+5", "-1.25e-3", " \t\n\r[ ] ", "true", "null", #"{"a":{"b":[]}}"#] {
            #expect(problem(valid) == nil, "\(valid)")
        }
    }

    @Test("decoding errors: missing member, null, wrong kind, number too large, each with its path")
    func decodingErrors() throws {
        struct Inner: Decodable { var n: UInt8 }
        struct Outer: Decodable { var list: [Inner] }
        let decoder = JSONTextDecoder()
        func failure(_ text: String) -> DecodingError? {
            guard case .failure(let error) = Result(catching: { try decoder.decode(Outer.self, from: text) }) else {
                return nil
            }
            return error as? DecodingError
        }
        guard case .keyNotFound(let key, let context) = failure(#"{"list":[{"n":1},{}]}"#) else {
            Issue.record("no keyNotFound")
            return
        }
        #expect(key.stringValue == "n" && context.codingPath.map(\.stringValue) == ["list", "Index 1"])
        guard case .valueNotFound = failure(#"{"list":[{"n":null}]}"#) else {
            Issue.record("no valueNotFound")
            return
        }
        guard case .typeMismatch(_, let mismatch) = failure(#"{"list":[{"n":"1"}]}"#) else {
            Issue.record("no typeMismatch")
            return
        }
        #expect(mismatch.codingPath.map(\.stringValue) == ["list", "Index 0", "n"])
        guard case .dataCorrupted(let corrupted) = failure(#"{"list":[{"n":256}]}"#) else {
            Issue.record("no dataCorrupted")
            return
        }
        #expect(corrupted.debugDescription == "the number 256 does not fit in UInt8")
        #expect(try decoder.decode(Inner.self, from: #"{"n":2.0,"unknown":[1,{"x":null}]}"#).n == 2)
        #expect(try decoder.decode([Int?].self, from: "[null,3]") == [nil, 3])
        #expect(try decoder.decode([String: Int].self, from: #"{"a":1,"a":2}"#) == ["a": 2])
    }

    @Test("objects of any size: each key found, a key given twice reads its last value; each object sorted alone")
    func objectsOfAnySize() throws {
        for count in [1, 16, 17, 1_000] {
            let members = (0..<count).map { #""k\#($0)":\#($0)"# } + [#""k0":-1"#]
            let decoded = try JSONTextDecoder().decode(
                [String: Int].self, from: "{" + members.joined(separator: ",") + "}")
            #expect(decoded.count == count)
            #expect(decoded["k0"] == -1, "the last k0 of \(count)")
            #expect(decoded["k\(count - 1)"] == (count == 1 ? -1 : count - 1))
            let value = try JSONTextDecoder().decode(JSONValue.self, from: try JSONTextEncoder().encode(decoded))
            #expect(value == .object(decoded.mapValues { .number(Double($0)) }))
        }
        // Objects in a row with the same keys, then other keys, then the same count of keys in another order.
        let rows: [[String: Int]] = [
            ["b": 1, "a": 2], ["b": 3, "a": 4], ["c": 5, "a": 6], ["a": 7, "c": 8], ["z": 9],
        ]
        #expect(
            try JSONTextEncoder().encodeToString(rows)
                == #"[{"a":2,"b":1},{"a":4,"b":3},{"a":6,"c":5},{"a":7,"c":8},{"z":9}]"#)
    }

    @Test("JSONValue converts without text in between, and its numbers are integers when they are whole")
    func jsonValue() throws {
        let value = try JSONValue(encoding: sample.children[0])
        #expect(value["mtu"] == .number(1500))
        #expect(value["ratio"] == .number(1e300))
        #expect(try value.decode(as: Sample.self) == sample.children[0])
        #expect(
            JSONValue.object(["n": .number(3), "x": .number(0.25), "s": .string("/")]).description
                == #"{"n":3,"s":"/","x":0.25}"#)
    }

    @Test("a fragment writes back the text the typed value writes, with its digits and members no type names")
    func fragment() throws {
        let typed = try JSONTextEncoder().encode(["links": [sample, sample]])
        let fragment = try #require(try JSONTextDecoder().decode([String: JSONFragment].self, from: typed)["links"])
        #expect(try JSONTextEncoder().encode(["links": fragment]) == typed)
        #expect(
            try JSONTextEncoder(prettyPrinted: true).encode(fragment)
                == JSONTextEncoder(prettyPrinted: true).encode([sample, sample]))
        // A counter above 2^53 keeps its digits; a member from a newer sender is kept; keys come out sorted.
        let newer = #"{"z":[],"bytes":18446744073709551615,"new":{"b":1,"a":-0.5e-7}}"#
        #expect(
            try JSONTextDecoder().decode(JSONFragment.self, from: newer).text
                == #"{"bytes":18446744073709551615,"new":{"a":-0.5e-7,"b":1},"z":[]}"#)
    }

    @Test("random values read back equal and as Foundation reads them")
    func randomValues() throws {
        var generator = SystemRandomNumberGenerator()
        func random(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &generator) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &generator))
            case 2:
                return Bool.random(using: &generator)
                    ? .number(Double(Int.random(in: -1_000_000...1_000_000, using: &generator)))
                    : .number(Double.random(in: -1e20...1e20, using: &generator))
            case 3:
                let scalars = (0..<Int.random(in: 0..<8, using: &generator)).compactMap { _ in
                    Unicode.Scalar(UInt32.random(in: 0..<0x1_0000, using: &generator))
                }
                return .string(String(String.UnicodeScalarView(scalars)))
            case 4: return .array((0..<Int.random(in: 0..<4, using: &generator)).map { _ in random(depth + 1) })
            default:
                return .object(
                    Dictionary(
                        (0..<Int.random(in: 0..<4, using: &generator)).map { ("k\($0)", random(depth + 1)) },
                        uniquingKeysWith: { a, _ in a }))
            }
        }
        for _ in 0..<500 {
            let value = random(0)
            let bytes = try JSONTextEncoder().encode(value)
            #expect(try JSONTextDecoder().decode(JSONValue.self, from: bytes) == value)
            let foundation = try JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed)
            let again = try JSONSerialization.data(withJSONObject: foundation, options: .fragmentsAllowed)
            #expect(try JSONTextDecoder().decode(JSONValue.self, from: [UInt8](again)) == value)
        }
    }
}
