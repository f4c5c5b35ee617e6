import FoundationEssentials
public import NetdevSession
import NetdevWire

/// Reads `netdevd.conf` and its drop-ins (`netdevd.conf.d/*.conf`, in lexical order, later ones winning) in
/// systemd's INI style into a ``Configuration``.
///
/// Every problem names its file and line. Unknown keys are errors with a suggestion (`did you mean
/// 'RequiredInterfaces'?`), because a misspelt key silently ignored is how a host ends up "online" too early.
/// With no file at all the defaults serve.
///
/// | section | key | value |
/// |---|---|---|
/// | `[Online]` | `RequiredInterfaces=` | globs with optional `:state`, space-separated; empty resets |
/// | `[Online]` | `IgnoredInterfaces=` | globs, space-separated; empty resets |
/// | `[Online]` | `MinimumOperationalState=` | `off`, `no-carrier`, `dormant`, `carrier`, `degraded`, `routable` |
/// | `[Online]` | `RequiredFamily=` | `any`, `ipv4`, `ipv6`, `both` |
/// | `[Devices]` | `Subsystems=` | udev subsystems, space-separated; empty resets |
/// | `[Hooks]` | `TimeoutSec=` | a time span (`30s`, `500ms`, `2min`); how long one hook may run; 0: no limit |
/// | `[Hooks]` | `DebounceSec=` | a time span; how long a link state must hold before hooks run |
/// | `[Hooks]` | `Parallelism=` | how many subjects may run hooks at once (1-64) |
/// | `[Daemon]` | `StopTimeoutSec=` | a time span; how long a stop waits for running hooks after their SIGTERM |
public struct ConfigurationLoader: Sendable {
    /// The main file.
    public var mainFile: String
    /// The drop-in directory.
    public var dropInDirectory: String

    /// A loader for `mainFile` and its `mainFile.d` drop-ins.
    public init(mainFile: String = "/etc/netdevd/netdevd.conf") {
        self.mainFile = mainFile
        self.dropInDirectory = mainFile + ".d"
    }

    /// The outcome of loading: a configuration with warnings, or the errors that stopped it.
    public enum Outcome: Sendable, Equatable {
        /// Loaded; the warnings did not stop it.
        case loaded(Configuration, warnings: [Diagnostic])
        /// Not loaded.
        case rejected([Diagnostic])
    }

    /// The files read, in order: the main file (if it exists), then the drop-ins sorted by name.
    public func files() -> [String] {
        var files: [String] = []
        if FileManager.default.fileExists(atPath: mainFile) {
            files.append(mainFile)
        }
        let dropIns = (try? FileManager.default.contentsOfDirectory(atPath: dropInDirectory)) ?? []
        files += dropIns.filter { $0.hasSuffix(".conf") }.sorted().map { dropInDirectory + "/" + $0 }
        return files
    }

    /// Reads every file and builds the configuration.
    public func load() -> Outcome {
        var builder = Builder()
        for file in files() {
            guard let data = FileManager.default.contents(atPath: file) else {
                builder.errors.append(Diagnostic(file: file, line: 0, message: "cannot be read"))
                continue
            }
            guard let text = String(data: data, encoding: .utf8) else {
                builder.errors.append(Diagnostic(file: file, line: 0, message: "is not UTF-8 text"))
                continue
            }
            builder.parse(text, file: file)
        }
        return builder.errors.isEmpty
            ? .loaded(builder.configuration, warnings: builder.warnings) : .rejected(builder.errors)
    }

    /// Parses one file's text.
    public static func parse(_ text: String, file: String = "netdevd.conf") -> Outcome {
        var builder = Builder()
        builder.parse(text, file: file)
        return builder.errors.isEmpty
            ? .loaded(builder.configuration, warnings: builder.warnings) : .rejected(builder.errors)
    }

    static let keys: [String: [String]] = [
        "Online": ["RequiredInterfaces", "IgnoredInterfaces", "MinimumOperationalState", "RequiredFamily"],
        "Devices": ["Subsystems"],
        "Hooks": ["TimeoutSec", "DebounceSec", "Parallelism"],
        "Daemon": ["StopTimeoutSec"],
    ]
}

/// Accumulates settings across files.
private struct Builder {
    var configuration = Configuration()
    var warnings: [Diagnostic] = []
    var errors: [Diagnostic] = []

    mutating func parse(_ text: String, file: String) {
        var section: String?
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = offset + 1
            let content = rawLine.trimmed
            if content.isEmpty || content.hasPrefix("#") || content.hasPrefix(";") {
                continue
            }
            func fail(_ message: String) {
                errors.append(Diagnostic(file: file, line: line, message: message))
            }
            if content.hasPrefix("[") {
                guard content.hasSuffix("]") else {
                    fail("section header '\(content)' is missing its closing ']'")
                    continue
                }
                let name = String(content.dropFirst().dropLast())
                guard ConfigurationLoader.keys[name] != nil else {
                    let suggestion = closest(name, in: Array(ConfigurationLoader.keys.keys))
                    fail("unknown section '[\(name)]'" + (suggestion.map { ", did you mean '[\($0)]'?" } ?? ""))
                    section = nil
                    continue
                }
                section = name
                continue
            }
            guard let equals = content.firstIndex(of: "=") else {
                fail("expected 'Key=Value', found '\(content)'")
                continue
            }
            let key = content[..<equals].trimmed
            let value = content[content.index(after: equals)...].trimmed
            guard let section else {
                fail("'\(key)=' must be inside a section such as [Online]")
                continue
            }
            let known = ConfigurationLoader.keys[section] ?? []
            guard known.contains(key) else {
                let everywhere = ConfigurationLoader.keys.flatMap { section, keys in keys.map { (section, $0) } }
                if let (other, _) = everywhere.first(where: { $0.1 == key }) {
                    fail("'\(key)=' belongs in [\(other)], not [\(section)]")
                } else {
                    let suggestion = closest(key, in: known)
                    fail("unknown key '\(key)' in [\(section)]" + (suggestion.map { ", did you mean '\($0)'?" } ?? ""))
                }
                continue
            }
            if let problem = apply(section: section, key: key, value: value) {
                fail(problem)
            }
        }
    }

    /// Applies one setting; returns what is wrong with the value, if anything.
    mutating func apply(section: String, key: String, value: String) -> String? {
        let words = value.split(separator: " ").map(String.init).filter { !$0.isEmpty }
        switch key {
        case "RequiredInterfaces":
            if words.isEmpty {
                configuration.requiredInterfaces = []
                return nil
            }
            for word in words {
                guard let requirement = InterfaceRequirement(parsing: word) else {
                    return "'\(word)' is not an interface glob with an optional :state "
                        + "(one of \(OperationalState.allCases.map(\.rawValue).joined(separator: ", ")))"
                }
                configuration.requiredInterfaces.append(requirement)
            }
        case "IgnoredInterfaces":
            configuration.ignoredInterfaces = words.isEmpty ? [] : configuration.ignoredInterfaces + words
        case "MinimumOperationalState":
            guard let state = OperationalState(name: value) else {
                return "MinimumOperationalState='\(value)' must be one of "
                    + OperationalState.allCases.map(\.rawValue).joined(separator: ", ")
            }
            configuration.minimumOperationalState = state
        case "RequiredFamily":
            guard let family = RequiredFamily(rawValue: value) else {
                return "RequiredFamily='\(value)' must be one of any, ipv4, ipv6, both"
            }
            configuration.requiredFamily = family
        case "Subsystems":
            configuration.trackedSubsystems = words.isEmpty ? [] : configuration.trackedSubsystems + words
        case "TimeoutSec", "DebounceSec", "StopTimeoutSec":
            guard let milliseconds = TimeSpan.milliseconds(value) else {
                return "\(key)='\(value)' is not a time span such as 30s, 500ms or 2min"
            }
            switch key {
            case "TimeoutSec": configuration.hookTimeoutMilliseconds = milliseconds
            case "DebounceSec": configuration.debounceMilliseconds = milliseconds
            default: configuration.stopTimeoutMilliseconds = milliseconds
            }
        case "Parallelism":
            guard let count = Int(value), (1...64).contains(count) else {
                return "Parallelism='\(value)' must be a number from 1 to 64"
            }
            configuration.hookParallelism = count
        default:
            return "unknown key '\(key)'"
        }
        return nil
    }
}

/// The known name closest to `name` (case-insensitive edit distance at most 3), for "did you mean".
func closest(_ name: String, in candidates: [String]) -> String? {
    let scored = candidates.map { ($0, editDistance(name.lowercased(), $0.lowercased())) }
    guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 3 else { return nil }
    return best.0
}

func editDistance(_ lhs: String, _ rhs: String) -> Int {
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
