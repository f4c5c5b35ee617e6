/// One `--name` a command takes: a flag, or an option with a value (`--name VALUE` or `--name=VALUE`), which may be
/// given once (the last one counts) or repeated (every one counts). An option may also have a one-letter name
/// (`-n 10`, `-n10`, `-f`), as journalctl's do.
public struct OptionSpec: Sendable {
    /// The long name, without `--`.
    public let name: String
    /// The one-letter name, without `-`.
    public let short: Character?
    /// What the value is called in help (`nil` for a flag).
    public let valueName: String?
    /// One line of help.
    public let help: String
    /// Every occurrence counts (`--interface a --interface b`).
    public let repeating: Bool
    /// The values the option accepts, said in help and checked while parsing (empty: any).
    public let choices: [String]
    /// The value when the option is not given, said in help.
    public let defaultValue: String?
    /// Left out of help (for tests and benchmarks), but accepted.
    public let hidden: Bool
    /// The value of the option given alone (`--json` is `--json=short`), or `nil` when it needs one. An option
    /// with such a value takes another only as `--name=VALUE` or as the next argument when that is one of its
    /// choices (`--json pretty`), never anything else that follows it (`links --json eth0` is a link).
    public var bareValue: String? = nil

    /// A flag: `--name`, no value.
    public static func flag(_ name: String, short: Character? = nil, help: String, hidden: Bool = false) -> OptionSpec {
        OptionSpec(
            name: name, short: short, valueName: nil, help: help, repeating: false, choices: [], defaultValue: nil,
            hidden: hidden)
    }

    /// An option with a value.
    public static func option(
        _ name: String, short: Character? = nil, value: String? = nil, help: String, repeating: Bool = false,
        choices: [String] = [], default defaultValue: String? = nil, hidden: Bool = false, bare: String? = nil
    ) -> OptionSpec {
        OptionSpec(
            name: name, short: short, valueName: value ?? name, help: help, repeating: repeating, choices: choices,
            defaultValue: defaultValue, hidden: hidden, bareValue: bare)
    }
}

/// A positional argument: required, optional, or any number of them (the last one only).
public struct ArgumentSpec: Sendable {
    /// What it is called in help and in "missing <name>".
    public let name: String
    /// One line of help.
    public let help: String
    /// May be left out.
    public let optional: Bool
    /// Takes every remaining argument.
    public let repeating: Bool

    /// A positional argument.
    public init(_ name: String, help: String, optional: Bool = false, repeating: Bool = false) {
        self.name = name
        self.help = help
        self.optional = optional || repeating
        self.repeating = repeating
    }
}

/// What a command takes and says about itself: its name (as typed after the program's, if a subcommand), its
/// options and arguments, and the help text made from them.
public struct CommandSpec: Sendable {
    /// The full name as it is typed: `netdevctl links`.
    public let name: String
    /// One line: what it does.
    public let abstract: String
    /// Paragraphs after the abstract.
    public let discussion: String
    /// Its options, in the order help lists them (`--help` is added).
    public let options: [OptionSpec]
    /// Its positional arguments, in order.
    public let arguments: [ArgumentSpec]

    /// A command.
    public init(
        name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
        arguments: [ArgumentSpec] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
    }

    /// `USAGE: ...` in one line: the arguments, then the options (hidden ones left out).
    public var usage: String {
        var parts = [name]
        for argument in arguments {
            let word = "<\(argument.name)>" + (argument.repeating ? " ..." : "")
            parts.append(argument.optional ? "[\(word)]" : word)
        }
        for option in options where !option.hidden {
            let word = option.valueName.map { "--\(option.name) <\($0)>" } ?? "--\(option.name)"
            parts.append(option.repeating ? "[\(word) ...]" : "[\(word)]")
        }
        return parts.joined(separator: " ")
    }

    /// The whole help: overview, usage, arguments, options, and any `subcommands` given (name, abstract).
    public func help(subcommands: [(name: String, abstract: String)] = []) -> String {
        var text = "OVERVIEW: \(abstract)\n"
        if !discussion.isEmpty { text += "\n\(discussion)\n" }
        text += "\nUSAGE: \(usage)\n"
        // Help in a column from 24 to 100, wrapped at spaces.
        func row(_ label: String, _ help: String) -> String {
            let indent = String(repeating: " ", count: 24)
            var lines: [String] = []
            var line = ""
            for word in help.split(separator: " ") {
                if !line.isEmpty, line.count + 1 + word.count > 76 {
                    lines.append(line)
                    line = ""
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            lines.append(line)
            let padded = "  " + label
            let first =
                padded.count < 24
                ? padded + String(repeating: " ", count: 24 - padded.count) + lines[0]
                : padded + "\n" + indent + lines[0]
            return ([first] + lines.dropFirst().map { indent + $0 }).joined(separator: "\n") + "\n"
        }
        if !arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            for argument in arguments { text += row("<\(argument.name)>", argument.help) }
        }
        text += "\nOPTIONS:\n"
        for option in options where !option.hidden {
            var help = option.help
            var notes: [String] = []
            if !option.choices.isEmpty { notes.append("values: " + option.choices.joined(separator: ", ")) }
            if let value = option.defaultValue { notes.append("default: \(value)") }
            if !notes.isEmpty { help += " (\(notes.joined(separator: "; ")))" }
            let long = option.valueName.map { "--\(option.name) <\($0)>" } ?? "--\(option.name)"
            text += row(option.short.map { "-\($0), " + long } ?? long, help)
        }
        text += row("--version", "Show the version.")
        text += row("-h, --help", "Show help information.")
        if !subcommands.isEmpty {
            text += "\nSUBCOMMANDS:\n"
            for subcommand in subcommands { text += row(subcommand.name, subcommand.abstract) }
            text += "\n  See '\(name.split(separator: " ").first ?? "") help <subcommand>' for detailed help.\n"
        }
        return text
    }

    /// Reads `arguments` (without the program's name): `--name VALUE`, `--name=VALUE`, flags, `--` ending the
    /// options, positionals in any order between them. `--help`/`-h` and `--version` anywhere win over the rest.
    public func parse(_ arguments: [String]) throws(UsageError) -> ParsedCommand {
        for argument in arguments.prefix(while: { $0 != "--" }) {
            if argument == "--help" || argument == "-h" { return ParsedCommand(request: .help) }
            if argument == "--version" { return ParsedCommand(request: .version) }
        }
        var parsed = ParsedCommand()
        var positionals: [String] = []
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let option: OptionSpec
            var value: String?
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = body.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                guard let long = options.first(where: { $0.name == name }) else {
                    let known = options.filter { !$0.hidden }.map(\.name) + ["help", "version"]
                    let suggestion = closestName(to: name, among: known, maximumDistance: 2)
                    throw UsageError(
                        self, "Unknown option '--\(name)'" + (suggestion.map { ". Did you mean '--\($0)'?" } ?? ""))
                }
                option = long
                if let equals = body.firstIndex(of: "=") {
                    value = String(body[body.index(after: equals)...])
                }
            } else {
                // `-n 10` or `-n10`; a flag's letter stands alone (`-f`).
                let letter = argument.dropFirst().first
                guard let short = options.first(where: { $0.short != nil && $0.short == letter }) else {
                    throw UsageError(self, "Unknown option '\(argument)'")
                }
                option = short
                let rest = argument.dropFirst(2)
                if !rest.isEmpty {
                    guard short.valueName != nil else {
                        throw UsageError(self, "Unknown option '\(argument)': '-\(letter!)' takes no value")
                    }
                    value = String(rest)
                }
            }
            let name = option.name
            guard option.valueName != nil else {
                if value != nil { throw UsageError(self, "The flag '--\(name)' takes no value") }
                parsed.flags.insert(name)
                continue
            }
            if value == nil, let bare = option.bareValue {
                if index < arguments.count, option.choices.contains(arguments[index]) {
                    value = arguments[index]
                    index += 1
                } else {
                    value = bare
                }
            }
            if value == nil {
                guard index < arguments.count else { throw UsageError(self, "Missing value for '--\(name)'") }
                value = arguments[index]
                index += 1
            }
            let given = value ?? ""
            if !option.choices.isEmpty, !option.choices.contains(given) {
                throw UsageError(
                    self,
                    "The value '\(given)' is invalid for '--\(name)': it is one of "
                        + option.choices.joined(separator: ", "))
            }
            if option.repeating {
                parsed.values[name, default: []].append(given)
            } else {
                parsed.values[name] = [given]
            }
        }
        for argument in self.arguments {
            if argument.repeating {
                parsed.positionals[argument.name] = positionals
                positionals = []
            } else if !positionals.isEmpty {
                parsed.positionals[argument.name] = [positionals.removeFirst()]
            } else if !argument.optional {
                throw UsageError(self, "Missing expected argument '<\(argument.name)>'")
            }
        }
        if let extra = positionals.first { throw UsageError(self, "Unexpected argument '\(extra)'") }
        return parsed
    }
}

/// The name a person most likely meant by `typed`, for "did you mean": the closest of `candidates` within
/// `maximumDistance` edits (case ignored), or `nil` when none is that close.
public func closestName(to typed: String, among candidates: [String], maximumDistance: Int) -> String? {
    let scored = candidates.map { ($0, editDistance(typed.lowercased(), $0.lowercased())) }
    guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= maximumDistance else { return nil }
    return best.0
}

/// The Levenshtein distance: how many letters must be inserted, deleted or changed to make one string the other.
public func editDistance(_ lhs: String, _ rhs: String) -> Int {
    let a = Array(lhs)
    let b = Array(rhs)
    var previous = Array(0...b.count)
    for i in 1...max(a.count, 1) where !a.isEmpty {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...max(b.count, 1) where !b.isEmpty {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return a.isEmpty ? b.count : previous[b.count]
}

/// What a command line said: option values, flags and positionals by name, or a request for help or the version.
public struct ParsedCommand: Sendable {
    /// Help or the version instead of running.
    public enum Request: Sendable {
        /// `--help` or `-h`.
        case help
        /// `--version`.
        case version
    }

    /// Set when the command line asked for help or the version.
    public var request: Request?
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String: [String]] = [:]

    init(request: Request? = nil) {
        self.request = request
    }

    /// The option's value (the last given), or `nil`.
    public func value(_ name: String) -> String? { values[name]?.last }

    /// Every value given for a repeating option, in order.
    public func values(_ name: String) -> [String] { values[name] ?? [] }

    /// Whether the flag was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The positional argument's value, or `nil` when an optional one was left out.
    public func argument(_ name: String) -> String? { positionals[name]?.first }

    /// Every value of a repeating positional argument.
    public func arguments(_ name: String) -> [String] { positionals[name] ?? [] }
}

/// A command line that cannot be run: what is wrong, and the usage line of the command it was for.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The command's usage line.
    public let usage: String
    /// The command's name, for "See '... --help'".
    public let command: String

    /// A usage error for `command`.
    public init(_ command: CommandSpec, _ message: String) {
        self.message = message
        self.usage = command.usage
        self.command = command.name
    }

    /// `Error: ...`, the usage, and where to read more: what goes on standard error.
    public var description: String {
        "Error: \(message)\nUsage: \(usage)\n  See '\(command) --help' for more information."
    }
}
