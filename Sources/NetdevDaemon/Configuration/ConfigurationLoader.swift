import CommandOptions
public import NetdevSession
import NetdevWire
import Syslog

#if canImport(Glibc)
import Glibc
#endif

/// Reads `netdevd.conf` and its drop-ins (`netdevd.conf.d/*.conf`, in lexical order, later ones winning) in
/// systemd's INI style into a ``Configuration``.
///
/// Every problem names its file and line. As systemd reads its own units, a line netdevd does not understand (an
/// unknown section or key, with a suggestion such as `did you mean 'RequiredInterfaces'?`; a value that does not
/// parse; a line that is not `Key=Value`) is a warning: that line is ignored, the setting keeps its default or the
/// value an earlier line gave it, and netdevd runs (a misspelt key said loudly, not silently ignored, and not a
/// daemon that will not start). Only what leaves nothing to read is an error: a file that cannot be read, one that
/// is not UTF-8 text or is over 1 MiB, a drop-in directory that cannot be listed. With no file at all the defaults
/// serve.
///
/// | section | key | value |
/// |---|---|---|
/// | `[Online]` | `RequiredInterfaces=` | globs with optional `:state`, space-separated; empty resets |
/// | `[Online]` | `IgnoredInterfaces=` | globs, space-separated; empty resets |
/// | `[Online]` | `MinimumOperationalState=` | `off`, `no-carrier`, `dormant`, `carrier`, `degraded`, `routable` |
/// | `[Online]` | `RequiredFamily=` | `any`, `ipv4`, `ipv6`, `both` |
/// | `[Devices]` | `Subsystems=` | udev subsystems, space-separated; empty resets |
/// | `[Hooks]` | `TimeoutSec=` | a time span (`30s`, `2min`); how long one hook may run; 0 or `infinity`: no limit |
/// | `[Hooks]` | `DebounceSec=` | a time span; how long a link state must hold before hooks run |
/// | `[Hooks]` | `Parallelism=` | how many subjects may run hooks at once (1-64) |
/// | `[Hooks]` | `User=`, `Group=` | a user or group name or number hooks run as (the hook runner's own when unset) |
/// | `[Hooks]` | `NetworkdDispatcherDirectory=` | repeatable; a directory of networkd-dispatcher's `<state>.d` scripts, run as networkd-dispatcher runs them; empty: none |
/// | `[Daemon]` | `StopTimeoutSec=` | a time span or `infinity`; how long a stop waits for hooks after SIGTERM |
/// | `[Metrics]` | `TextfileDirectory=` | an absolute directory for `netdevd.prom` (node_exporter); empty: none |
///
/// Time spans are at most 365 days. Files may have LF or CRLF line endings and a UTF-8 byte order mark; a file
/// larger than 1 MiB, one that cannot be read, and a drop-in directory that cannot be listed are errors.
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

    /// The largest file read: a configuration is a few hundred bytes, and a file of megabytes is a mistake.
    public static let maximumFileBytes = 1 << 20

    /// The files read, in order: the main file (if it exists), then the drop-ins sorted by name; a drop-in
    /// directory that exists but cannot be listed is an error, not an empty directory.
    func files() -> (files: [String], errors: [Diagnostic]) {
        var files: [String] = []
        var errors: [Diagnostic] = []
        var status = stat()
        if stat(mainFile, &status) == 0 {
            files.append(mainFile)
        } else if errno != ENOENT {
            errors.append(
                Diagnostic(file: mainFile, line: 0, message: "cannot be read: \(String(cString: strerror(errno)))"))
        }
        switch TextFile.names(in: dropInDirectory) {
        case .success(let names):
            files += (names ?? []).filter { $0.hasSuffix(".conf") }.sorted().map { dropInDirectory + "/" + $0 }
        case .failure(let problem):
            errors.append(Diagnostic(file: dropInDirectory, line: 0, message: "cannot be listed: \(problem)"))
        }
        return (files, errors)
    }

    /// Reads every file and builds the configuration.
    public func load() -> Outcome {
        var builder = Builder()
        let (files, listingErrors) = files()
        for file in files {
            let bytes: [UInt8]
            switch TextFile.bytes(at: file, limit: Self.maximumFileBytes) {
            case .success(let read): bytes = read
            case .failure(let problem):
                builder.errors.append(Diagnostic(file: file, line: 0, message: "cannot be read: \(problem)"))
                continue
            }
            builder.read(bytes, file: file)
        }
        builder.errors += listingErrors
        return builder.outcome
    }

    /// Builds the configuration from files already read, in order (the main file, then the drop-ins), as
    /// ``load()`` does after reading them: each must be UTF-8 text.
    public static func parse(files: [(name: String, bytes: [UInt8])]) -> Outcome {
        var builder = Builder()
        for file in files {
            builder.read(file.bytes, file: file.name)
        }
        return builder.outcome
    }

    /// Parses one file's text.
    public static func parse(_ text: String, file: String = "netdevd.conf") -> Outcome {
        var builder = Builder()
        builder.parse(text, file: file)
        return builder.outcome
    }

    static let keys: [String: [String]] = [
        "Online": ["RequiredInterfaces", "IgnoredInterfaces", "MinimumOperationalState", "RequiredFamily"],
        "Devices": ["Subsystems"],
        "Hooks": ["TimeoutSec", "DebounceSec", "Parallelism", "User", "Group", "NetworkdDispatcherDirectory"],
        "Daemon": ["StopTimeoutSec"],
        "Metrics": ["TextfileDirectory"],
    ]
}

/// Accumulates settings across files.
private struct Builder {
    var configuration = Configuration()
    var warnings: [Diagnostic] = []
    var errors: [Diagnostic] = []

    var outcome: ConfigurationLoader.Outcome {
        errors.isEmpty ? .loaded(configuration, warnings: warnings) : .rejected(errors)
    }

    /// Parses one file's bytes, which must be UTF-8 text.
    mutating func read(_ bytes: [UInt8], file: String) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            errors.append(Diagnostic(file: file, line: 0, message: "is not UTF-8 text"))
            return
        }
        parse(text, file: file)
    }

    mutating func parse(_ text: String, file: String) {
        var section: String?
        var unknownSection: String?
        for (offset, rawLine) in TextFile.lines(text).enumerated() {
            let line = offset + 1
            let content = rawLine.trimmed
            if content.isEmpty || content.hasPrefix("#") || content.hasPrefix(";") {
                continue
            }
            // A line not understood is said, with the hint, and ignored.
            func fail(_ message: String) {
                warnings.append(Diagnostic(file: file, line: line, message: message + "; the line is ignored"))
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
                    unknownSection = name
                    continue
                }
                section = name
                unknownSection = nil
                continue
            }
            guard let equals = content.firstIndex(of: "=") else {
                fail("expected 'Key=Value', found '\(content)'")
                continue
            }
            let key = content[..<equals].trimmed
            let value = content[content.index(after: equals)...].trimmed
            guard let section else {
                // The section the key belongs to is the hint, whether the line is under a misspelt section or none.
                let home = ConfigurationLoader.keys.first { $0.value.contains(key) }?.key
                if let unknownSection {
                    fail(
                        "'\(key)=' is under the unknown section [\(unknownSection)]"
                            + (home.map { "; it belongs in [\($0)]" } ?? ""))
                } else {
                    fail("'\(key)=' must be inside a section" + (home.map { ": [\($0)]" } ?? " such as [Online]"))
                }
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

    /// A name as useradd accepts it (letters, digits, `_`, `-`, `.`, not starting with `-`; at most 32 bytes), or
    /// a number.
    static func isUserOrGroupName(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard (1...32).contains(bytes.count), bytes[0] != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
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
            let span: TimeSpan
            switch TimeSpan.parse(value) {
            case .success(let parsed): span = parsed
            case .failure(.notATimeSpan):
                return "\(key)='\(value)' is not a time span such as 30s, 500ms, 2min or infinity"
            case .failure(.tooLarge):
                return "\(key)='\(value)' is longer than 365 days"
                    + (key == "DebounceSec" ? "" : "; write infinity for no limit")
            }
            switch (key, span) {
            // As systemd's TimeoutSec=: 0 and infinity both mean no limit.
            case ("TimeoutSec", .finite(let milliseconds)): configuration.hookTimeoutMilliseconds = milliseconds
            case ("TimeoutSec", .infinity): configuration.hookTimeoutMilliseconds = 0
            case ("DebounceSec", .finite(let milliseconds)): configuration.debounceMilliseconds = milliseconds
            case ("DebounceSec", .infinity):
                return "DebounceSec= cannot be infinity: the hooks of a changed link would never run (0 runs them "
                    + "at once)"
            case (_, .finite(let milliseconds)): configuration.stopTimeoutMilliseconds = milliseconds
            case (_, .infinity): configuration.stopTimeoutMilliseconds = nil
            }
        case "User", "Group":
            guard value.isEmpty || Self.isUserOrGroupName(value) else {
                return "\(key)='\(value)' is not a user or group name or number"
            }
            if key == "User" {
                configuration.hookUser = value.isEmpty ? nil : value
            } else {
                configuration.hookGroup = value.isEmpty ? nil : value
            }
        case "NetworkdDispatcherDirectory":
            // Repeatable, in priority order; an empty assignment empties the list (as systemd's list settings).
            guard !value.isEmpty else {
                configuration.networkdDispatcherDirectories = []
                return nil
            }
            guard value.hasPrefix("/"), !value.split(separator: "/").contains(where: { $0 == "." || $0 == ".." })
            else {
                return "NetworkdDispatcherDirectory='\(value)' must be an absolute path without '.' or '..', such "
                    + "as /etc/networkd-dispatcher"
            }
            var directory = Substring(value)
            while directory.count > 1 && directory.hasSuffix("/") { directory = directory.dropLast() }
            if !configuration.networkdDispatcherDirectories.contains(String(directory)) {
                configuration.networkdDispatcherDirectories.append(String(directory))
            }
        case "Parallelism":
            guard let count = Int(value), (1...64).contains(count) else {
                return "Parallelism='\(value)' must be a number from 1 to 64"
            }
            configuration.hookParallelism = count
        case "TextfileDirectory":
            guard !value.isEmpty else {
                configuration.metricsTextfileDirectory = nil
                return nil
            }
            guard value.hasPrefix("/") else {
                return
                    "TextfileDirectory='\(value)' must be an absolute path, such as /var/lib/prometheus/node-exporter"
            }
            guard !value.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else {
                return "TextfileDirectory='\(value)' must not contain '.' or '..'"
            }
            // One spelling per directory (`/run/x/` is `/run/x`), so a reload that only adds a slash moves nothing.
            var directory = Substring(value)
            while directory.count > 1 && directory.hasSuffix("/") { directory = directory.dropLast() }
            configuration.metricsTextfileDirectory = String(directory)
        default:
            return "unknown key '\(key)'"
        }
        return nil
    }
}

/// The known name closest to `name` (case-insensitive edit distance at most 3), for "did you mean".
func closest(_ name: String, in candidates: [String]) -> String? {
    closestName(to: name, among: candidates, maximumDistance: 3)
}

extension ConfigurationLoader {
    /// The configuration netdevd starts with: its warnings said, or, when it cannot be read, its errors and what to
    /// do about them said and `nil` (netdevd then exits with ``Daemon/configurationUnreadable``).
    func loadAtStart(say: (LogPriority, String) -> Void) -> Configuration? {
        switch load() {
        case .loaded(let configuration, let warnings):
            for warning in warnings { say(.warning, warning.description) }
            return configuration
        case .rejected(let errors):
            for error in errors { say(.error, error.description) }
            say(
                .error,
                "netdevd cannot start: its configuration cannot be read (above); fix it, check it with "
                    + "'netdevd --check-config', then start netdevd again (systemd does not retry: exit 78)")
            return nil
        }
    }
}
