import ArgumentParser
import FoundationEssentials
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// The `netdevctl` program, for the executables that run it: `netdevctl` itself, and `netdevd` when it is invoked
/// under the name `netdevctl` (the package installs one binary for both).
public enum NetdevctlProgram {
    /// Parses the command line and runs the command; exits with the documented status (0, 1, 2, 3 or 4).
    public static func main() {
        Netdevctl.main()
    }
}

/// `netdevctl`: query and follow netdevd.
struct Netdevctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netdevctl",
        abstract: "Query and follow netdevd: links, devices, online state.",
        discussion: """
            Exit status: 0 success, 1 failure, 2 usage error, 3 timeout (wait-online), 4 netdevd unreachable.
            The socket is /run/netdevd/io.netdevd, or NETDEVD_SOCKET, or --socket.
            """,
        version: "0.1.0",
        subcommands: [
            Status.self, Links.self, LinkCommand.self, Devices.self, DeviceCommand.self, Monitor.self, WaitOnline.self,
            Reload.self,
        ],
        defaultSubcommand: Status.self
    )

    /// Runs the command, mapping errors to the documented exit statuses.
    static func main() {
        do {
            var command = try parseAsRoot(globalOptionsAfterSubcommand(Array(CommandLine.arguments.dropFirst())))
            try command.run()
        } catch let failure as CommandFailure {
            writeToStandardError(failure.message + "\n")
            Glibc.exit(failure.status)
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                writeToStandardError(fullMessage(for: error) + "\n")
                Glibc.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// Moves options written before the subcommand (`netdevctl --json=short links`, as networkctl allows) after it,
/// where the subcommand's options live.
func globalOptionsAfterSubcommand(_ arguments: [String]) -> [String] {
    let names = Set(Netdevctl.configuration.subcommands.map { $0._commandName })
    // `netdevctl help links` is the argument parser's help for `links`, not `links help`.
    guard arguments.first != "help" else { return arguments }
    guard let index = arguments.firstIndex(where: { names.contains($0) }), index > 0 else { return arguments }
    return [arguments[index]] + arguments[..<index] + arguments[(index + 1)...]
}

/// A failure with its exit status and a message that says what to do.
struct CommandFailure: Error {
    let status: Int32
    let message: String

    static func unreachable(_ path: String, _ error: VarlinkClientError) -> CommandFailure {
        CommandFailure(
            status: 4,
            message: "netdevctl: \(error)\nIs netdevd running? Start it with `systemctl start netdevd` "
                + "(or `make run` in a checkout), or point --socket / NETDEVD_SOCKET at its socket."
        )
    }
}

/// Options every subcommand takes.
struct CommonOptions: ParsableArguments {
    @Option(help: "netdevd's control socket (default: $NETDEVD_SOCKET or /run/netdevd/io.netdevd).")
    var socket: String?

    @Option(help: "Print JSON: short (one line), pretty, or off.")
    var json: JSONMode = .off

    @Flag(help: "Leave out table headers and the summary line.")
    var noLegend = false

    var socketPath: String {
        socket ?? ProcessInfo.processInfo.environment["NETDEVD_SOCKET"] ?? "/run/netdevd/io.netdevd"
    }

    /// Connects, turning "not there" into exit status 4 with a hint.
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
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            json == .pretty
            ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        do {
            let text = String(decoding: try encoder.encode(value), as: UTF8.self)
            print(json == .pretty ? Self.closingEmptyContainers(text) : text)
        } catch {
            writeToStandardError("netdevctl: cannot print the reply as JSON: \(error)\n")
        }
        return true
    }

    /// `text` (pretty-printed JSON) with every empty array or object as `[]` or `{}`: the encoder prints them
    /// over lines of their own ("[\n\n]"). Brackets inside strings are left as they are.
    static func closingEmptyContainers(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        var inString = false
        var escaped = false
        for byte in text.utf8 {
            if inString {
                output.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") {
                let opening = byte == UInt8(ascii: "]") ? UInt8(ascii: "[") : UInt8(ascii: "{")
                // Back over the whitespace since the last token: if that token opened this container, it is empty.
                var index = output.count
                while index > 0, [0x20, 0x0A, 0x0D, 0x09].contains(output[index - 1]) { index -= 1 }
                if index > 0, output[index - 1] == opening { output.removeSubrange(index...) }
            }
            if byte == UInt8(ascii: "\"") { inString = true }
            output.append(byte)
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Prints `value` as JSON in the chosen mode; returns `false` when JSON is off or there is no value.
    func printJSON(_ value: JSONValue?) -> Bool {
        guard let value else { return false }
        return printJSON(encoding: value)
    }
}

/// `--json`.
enum JSONMode: String, ExpressibleByArgument, CaseIterable {
    case short, pretty, off
}

/// Colours operational and online states, only on a terminal and never with NO_COLOR.
enum Paint {
    static let enabled = isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

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
    let all = (legend ? [header] : []) + rows
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    return all.map { row in
        row.enumerated().map { column, cell in
            column == row.count - 1 ? cell : cell + String(repeating: " ", count: max(0, widths[column] - cell.count))
        }.joined(separator: " ")
    }.joined(separator: "\n")
}
