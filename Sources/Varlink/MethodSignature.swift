public import JSONCoding

/// A method's input parameters as its interface description declares them (`method ListLinks(pattern: ?string) ->
/// ...`), read from the description itself, so what the server enforces is what it publishes.
///
/// Contract, as systemd's sd-varlink checks calls: a parameter the method does not declare, a declared one that is
/// missing (unless optional, `?type`) or of another type is refused with `org.varlink.service.InvalidParameter`
/// naming it, before the method runs. `null` stands for an absent optional parameter.
public struct MethodSignature: Sendable, Equatable {
    /// The declared parameters, in order.
    public var parameters: [(name: String, type: VarlinkType)]

    /// The same parameters, with the same types, in the same order.
    public static func == (lhs: MethodSignature, rhs: MethodSignature) -> Bool {
        lhs.parameters.map(\.name) == rhs.parameters.map(\.name)
            && lhs.parameters.map(\.type) == rhs.parameters.map(\.type)
    }

    /// The methods an interface description declares, by member name; a method whose parameters cannot be read is
    /// left out (and then takes any parameters).
    public static func parse(_ description: String) -> [String: MethodSignature] {
        var methods: [String: MethodSignature] = [:]
        // Comments run to the end of their line; a declaration may span lines.
        let text = description.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.firstIndex(of: "#").map { line[..<$0] } ?? line }
            .joined(separator: "\n")
            // A declaration split over lines (`method X(\n  a: string\n) -> ...`) joined into one.
            .split(separator: "\n").reduce(into: [String]()) { lines, line in
                if let last = lines.last, last.filter({ $0 == "(" }).count > last.filter({ $0 == ")" }).count {
                    lines[lines.count - 1] = last + " " + line
                } else {
                    lines.append(String(line))
                }
            }
            .joined(separator: "\n")
        // Each declaration starts a line: `method Name(parameters) -> (...)`.
        for declaration in text.split(separator: "\n").map({ trimmed($0) }).filter({ $0.hasPrefix("method ") }) {
            let rest = declaration.dropFirst("method ".count)
            guard let open = rest.firstIndex(of: "("), let close = matching(rest, from: open) else { continue }
            let name = trimmed(rest[..<open])
            var parameters: [(String, VarlinkType)] = []
            var readable = true
            for field in topLevel(rest[rest.index(after: open)..<close]) where !trimmed(field).isEmpty {
                let parts = field.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, let type = VarlinkType(trimmed(parts[1])) else {
                    readable = false
                    break
                }
                parameters.append((String(trimmed(parts[0])), type))
            }
            if readable, !name.isEmpty { methods[String(name)] = MethodSignature(parameters: parameters) }
        }
        return methods
    }

    /// The first parameter of `call` that the declaration refuses (an undeclared one first, in name order; then
    /// the declared ones in order), or `nil` when the call's parameters are what it declares.
    public func invalidParameter(in given: [String: JSONValue]) -> String? {
        let declared = Set(parameters.map(\.name))
        if let unknown = given.keys.filter({ !declared.contains($0) }).min() { return unknown }
        for (name, type) in parameters where !type.accepts(given[name]) {
            return name
        }
        return nil
    }
}

/// A type of Varlink's interface definition language, as far as a call's parameters are checked: `string`, `int`,
/// `float`, `bool`, `object`, a named type or an enum (any object or string), `[]T`, `[string]T`, `?T`.
public indirect enum VarlinkType: Sendable, Equatable {
    case string, int, float, bool, object
    /// A named type (`Link`): an object, or the string of a named enum's value.
    case named(String)
    /// An enum (`(a, b)`): one of its names.
    case enumeration([String])
    case array(VarlinkType)
    case map(VarlinkType)
    case optional(VarlinkType)

    /// The type `text` spells, or `nil` when it is not one.
    init?(_ text: Substring) {
        let text = trimmed(text)
        if text.hasPrefix("?") {
            guard let inner = VarlinkType(text.dropFirst()) else { return nil }
            self = .optional(inner)
        } else if text.hasPrefix("[]") {
            guard let inner = VarlinkType(text.dropFirst(2)) else { return nil }
            self = .array(inner)
        } else if text.hasPrefix("[string]") {
            guard let inner = VarlinkType(text.dropFirst(8)) else { return nil }
            self = .map(inner)
        } else if text.hasPrefix("(") && text.hasSuffix(")") {
            self = .enumeration(text.dropFirst().dropLast().split(separator: ",").map { String(trimmed($0)) })
        } else {
            switch text {
            case "string": self = .string
            case "int": self = .int
            case "float": self = .float
            case "bool": self = .bool
            case "object": self = .object
            default:
                guard let first = text.first, first.isUppercase, text.allSatisfy({ $0.isLetter || $0.isNumber })
                else { return nil }
                self = .named(String(text))
            }
        }
    }

    /// Whether `value` (`nil` when absent) is of this type.
    func accepts(_ value: JSONValue?) -> Bool {
        switch (self, value) {
        case (.optional, nil), (.optional, .null?): true
        case (.optional(let inner), let value?): inner.accepts(value)
        case (_, nil), (_, .null?): false
        case (.string, .string?), (.bool, .bool?), (.float, .number?), (.object, .object?), (.named, .object?): true
        // A named type may be an enum (`type Mode (a, b)`): its values are strings.
        case (.named, .string?): true
        case (.int, .number(let number)?): number.rounded() == number && abs(number) <= 9_007_199_254_740_992
        case (.enumeration(let names), .string(let name)?): names.contains(name)
        case (.array(let element), .array(let values)?): values.allSatisfy { element.accepts($0) }
        case (.map(let element), .object(let values)?): values.values.allSatisfy { element.accepts($0) }
        default: false
        }
    }
}

/// The index of the `)` that closes the `(` at `open`, or `nil`.
private func matching(_ text: Substring, from open: Substring.Index) -> Substring.Index? {
    var depth = 0
    for index in text[open...].indices {
        if text[index] == "(" { depth += 1 }
        if text[index] == ")" {
            depth -= 1
            if depth == 0 { return index }
        }
    }
    return nil
}

/// `text` split at the commas outside parentheses (an inline enum's `(a, b)` stays one field).
private func topLevel(_ text: Substring) -> [Substring] {
    var fields: [Substring] = []
    var depth = 0
    var start = text.startIndex
    for index in text.indices {
        switch text[index] {
        case "(": depth += 1
        case ")": depth -= 1
        case "," where depth == 0:
            fields.append(text[start..<index])
            start = text.index(after: index)
        default: break
        }
    }
    fields.append(text[start...])
    return fields
}

/// `text` without the white space at either end.
private func trimmed(_ text: some StringProtocol) -> Substring {
    let characters = Substring(text)
    guard let first = characters.firstIndex(where: { !$0.isWhitespace }),
        let last = characters.lastIndex(where: { !$0.isWhitespace })
    else { return "" }
    return characters[first...last]
}
