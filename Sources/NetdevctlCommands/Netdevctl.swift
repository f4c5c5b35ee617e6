import CommandOptions
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// The `netdevctl` program, for the executables that run it: `netdevctl` itself, and `netdevd` when it is invoked
/// under the name `netdevctl` (the package installs one binary for both).
public enum NetdevctlProgram {
    /// Parses the command line and runs the command; exits with the documented status (0, 1, 2, 69 or 75).
    public static func main() -> Never {
        exit(Netdevctl.run(Array(CommandLine.arguments.dropFirst())))
    }
}

/// A `netdevctl` subcommand: what it takes (its ``CommandSpec``, the common options added), made from a parsed
/// command line, and run.
protocol NetdevctlCommand: Sendable {
    /// The name typed after `netdevctl`.
    static var name: String { get }
    /// One line of help.
    static var abstract: String { get }
    /// Paragraphs of help.
    static var discussion: String { get }
    /// Its own options and arguments (the common ones are added).
    static var options: [OptionSpec] { get }
    static var arguments: [ArgumentSpec] { get }

    /// The command as the line said it; a value it cannot take is a usage error.
    init(_ parsed: ParsedCommand, options: CommonOptions) throws(UsageError)

    /// Runs; a ``CommandFailure`` says the exit status and why.
    func run() throws
}

extension NetdevctlCommand {
    static var discussion: String { "" }
    static var options: [OptionSpec] { [] }
    static var arguments: [ArgumentSpec] { [] }

    static var spec: CommandSpec {
        CommandSpec(
            name: "netdevctl \(name)", abstract: abstract, discussion: discussion,
            options: options + CommonOptions.options, arguments: arguments)
    }
}

/// `netdevctl`: query and follow netdevd.
enum Netdevctl {
    static let version = "0.1.0"

    static let commands: [any NetdevctlCommand.Type] = [
        Status.self, Links.self, LinkCommand.self, Devices.self, DeviceCommand.self, Monitor.self, WaitOnline.self,
        Reload.self, MetricsCommand.self, LogCommand.self,
    ]

    static let spec = CommandSpec(
        name: "netdevctl",
        abstract: "Query and follow netdevd: links, devices, online state.",
        discussion: """
            Exit status: 0 success, 1 failure, 2 usage error, 75 timeout (wait-online), 69 netdevd unreachable.
            The socket is /run/netdevd/io.netdevd, or NETDEVD_SOCKET, or --socket. Without a command: status.
            """,
        options: CommonOptions.options)

    static func help(_ command: (any NetdevctlCommand.Type)?) -> String {
        guard let command else {
            return spec.help(
                subcommands: commands.map { ($0.name + ($0 == Status.self ? " (default)" : ""), $0.abstract) })
        }
        return command.spec.help()
    }

    /// Runs the command line `arguments` (without the program's name); the exit status.
    static func run(_ arguments: [String]) -> Int32 {
        var arguments = arguments
        // `netdevctl --generate-completion-script SHELL`, for the package's build.
        if arguments.first == "--generate-completion-script" {
            guard arguments.count == 2, let script = Completions.script(for: arguments[1]) else {
                let shells = Completions.shells.joined(separator: ", ")
                writeToStandardError("\(UsageError(spec, "--generate-completion-script takes one of \(shells)"))\n")
                return 2
            }
            print(script, terminator: "")
            return 0
        }
        // `netdevctl help [COMMAND]`.
        if arguments.first == "help" {
            guard arguments.count <= 2 else {
                writeToStandardError("\(UsageError(spec, "help takes one command at most"))\n")
                return 2
            }
            let command = arguments.count == 2 ? commands.first { $0.name == arguments[1] } : nil
            if arguments.count == 2, command == nil {
                writeToStandardError("\(UsageError(spec, "Unknown command '\(arguments[1])'"))\n")
                return 2
            }
            print(help(command), terminator: "")
            return 0
        }
        // The command is the first argument that names one: options may come before it (`netdevctl --json=short
        // links`, as networkctl allows); without one it is status.
        var command: (any NetdevctlCommand.Type)?
        if let index = arguments.firstIndex(where: { argument in commands.contains { $0.name == argument } }) {
            command = commands.first { $0.name == arguments[index] }
            arguments.remove(at: index)
        }
        let chosen = command ?? Status.self
        let runnable: any NetdevctlCommand
        do throws(UsageError) {
            let parsed = try chosen.spec.parse(arguments)
            switch parsed.request {
            case .help:
                print(help(command), terminator: "")
                return 0
            case .version:
                print(version)
                return 0
            case nil:
                runnable = try chosen.init(parsed, options: CommonOptions(parsed))
            }
        } catch {
            writeToStandardError("\(error)\n")
            return 2
        }
        do {
            try runnable.run()
            return 0
        } catch let failure as CommandFailure {
            writeToStandardError(failure.message + "\n")
            return failure.status
        } catch {
            writeToStandardError("netdevctl: \(error)\n")
            return 1
        }
    }
}

/// A failure with its exit status and a message that says what to do.
struct CommandFailure: Error {
    let status: Int32
    let message: String

    static func unreachable(_ path: String, _ error: VarlinkClientError) -> CommandFailure {
        CommandFailure(
            status: 69,
            message: "netdevctl: \(error)\nIs netdevd running? `systemctl status netdevd.socket netdevd` says; "
                + "`systemctl start netdevd` starts it. Or point --socket / NETDEVD_SOCKET at its socket."
        )
    }
}

/// Options every subcommand takes.
struct CommonOptions {
    static let options: [OptionSpec] = [
        .option(
            "socket", value: "path",
            help: "netdevd's control socket (default: $NETDEVD_SOCKET or /run/netdevd/io.netdevd)."),
        .option(
            "json", value: "mode", help: "Print JSON: short (one line; --json alone), pretty, or off.",
            choices: JSONMode.allCases.map(\.rawValue), default: "off", bare: "short"),
        .flag("no-legend", help: "Leave out table headers and the summary line."),
    ]

    var socket: String?
    var json: JSONMode = .off
    var noLegend = false

    init(_ parsed: ParsedCommand) {
        socket = parsed.value("socket")
        json = parsed.value("json").flatMap(JSONMode.init(rawValue:)) ?? .off
        noLegend = parsed.flag("no-legend")
    }

    var socketPath: String {
        socket ?? getenv("NETDEVD_SOCKET").map { String(cString: $0) } ?? "/run/netdevd/io.netdevd"
    }

    /// Connects, turning "not there" into exit status 69 (EX_UNAVAILABLE) with a hint.
    func client() throws -> VarlinkClient {
        do {
            return try VarlinkClient(path: socketPath)
        } catch {
            throw CommandFailure.unreachable(socketPath, error)
        }
    }

    /// Calls `method`, turning service errors into exit status 1.
    func call(_ method: String, _ parameters: [String: JSONValue] = [:]) throws -> [String: JSONValue] {
        let client = try self.client()
        do {
            return try client.call(method, parameters)
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: \(method) failed: \(error)")
        }
    }

    /// Calls `method` and decodes its reply into `Parameters` directly, turning service errors into exit status 1.
    func call<Parameters: Decodable>(
        _ method: String, _ parameters: [String: JSONValue] = [:], as type: Parameters.Type
    ) throws -> Parameters {
        let client = try self.client()
        do {
            return try client.call(method, parameters, as: type)
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: \(method) failed: \(error)")
        }
    }

    /// Prints `value` (a reply's JSON values, or a decoded reply: the same text, keys sorted and absent optionals
    /// left out) as JSON in the chosen mode; returns `false` when JSON is off. A value that cannot be encoded is
    /// said on standard error.
    func printJSON(encoding value: some Encodable) -> Bool {
        guard json != .off else { return false }
        do {
            print(try JSONTextEncoder(prettyPrinted: json == .pretty).encodeToString(value))
        } catch {
            writeToStandardError("netdevctl: cannot print the reply as JSON: \(error)\n")
        }
        return true
    }

    /// Prints `value` as JSON in the chosen mode; returns `false` when JSON is off or there is no value.
    func printJSON(_ value: JSONValue?) -> Bool {
        guard let value else { return false }
        return printJSON(encoding: value)
    }
}

/// `--json`.
enum JSONMode: String, CaseIterable {
    case short, pretty, off
}

/// Colours operational and online states, only on a terminal and never with NO_COLOR.
enum Paint {
    static let enabled = isatty(STDOUT_FILENO) == 1 && getenv("NO_COLOR") == nil

    static func state(_ text: String) -> String {
        guard enabled else { return text }
        let code: String
        switch text {
        case "routable", "online": code = "32"
        case "degraded", "partial", "carrier": code = "33"
        case "off", "no-carrier", "offline": code = "90"
        default: return text
        }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }
}

/// Decodes a reply member (`what`, for the message) into a report type; a reply without it, or one that does not
/// decode, is an error that says which and why.
func decode<Value: Decodable>(_ value: JSONValue?, as type: Value.Type, what: String) throws(CommandFailure) -> Value {
    func notUnderstood(_ detail: String) -> CommandFailure {
        CommandFailure(
            status: 1,
            message: "netdevctl: netdevd sent a \(what) this netdevctl does not understand (is it older than "
                + "netdevd?): \(detail)")
    }
    guard let value else { throw notUnderstood("the reply has none") }
    do {
        return try value.decode(as: type)
    } catch {
        throw notUnderstood("\(error)")
    }
}

/// A table with left-aligned columns.
func table(_ header: [String], _ rows: [[String]], legend: Bool) -> String {
    tableLines(header, rows, legend: legend).joined(separator: "\n")
}

/// The lines of a table with left-aligned columns. The last column is not padded, so it may hold text that takes no
/// room (a colour's escape codes).
func tableLines(_ header: [String], _ rows: [[String]], legend: Bool) -> [String] {
    let all = (legend ? [header] : []) + rows
    let widths = header.indices.dropLast().map { column in all.map { $0[column].count }.max() ?? 0 }
    return all.map { row in
        var line = ""
        for (column, cell) in row.enumerated() {
            if column > 0 { line += " " }
            line += cell
            if column < widths.count {
                line += String(repeating: " ", count: max(0, widths[column] - cell.count))
            }
        }
        return line
    }
}
