import CommandOptions
import NetdevDaemon
import NetdevSession
import NetdevWire
import Syslog
import Systemd
import Udev

#if canImport(Glibc)
import Glibc
#endif

/// `netdevd`: watches network links and devices, tells systemd and the journal, runs hooks.
struct NetdevdCommand {
    static let version = Daemon.version

    static let spec = CommandSpec(
        name: "netdevd",
        abstract: "Watch network links and devices; log every change, tell systemd, run hooks.",
        discussion: """
            Runs in the foreground. Under systemd it is a Type=notify service; at a terminal it logs readable \
            lines. Configuration: /etc/netdevd/netdevd.conf and netdevd.conf.d/*.conf (see netdevd.conf(5)).
            Signals: SIGHUP reloads the configuration, SIGTERM and SIGINT stop.
            """,
        options: [
            .option(
                "config", value: "file", help: "The configuration file; drop-ins are read from <file>.d/.",
                default: "/etc/netdevd/netdevd.conf"),
            .option("socket", value: "path", help: "The control socket's path.", default: "/run/netdevd/io.netdevd"),
            .option(
                "udev-source", value: "source",
                help: "The uevent source: auto (udev while udevd runs, kernel while it does not), udev or kernel.",
                choices: ["auto", "udev", "kernel"], default: "auto"),
            .option(
                "log-target", value: "target", help: "Where to log.", choices: ["auto", "journal", "console"],
                default: "auto"),
            .option(
                "log-level", value: "level", help: "The lowest level logged.",
                choices: ["debug", "info", "notice", "warning", "error"], default: "info"),
            .option(
                "record", value: "file", help: "Append every processed event to this file as JSON lines, for replay."),
            .option(
                "replay", value: "file",
                help:
                    "Run a --record file through the session offline and print the journal entries and hook runs it makes."
            ),
            .flag("json", help: "With --replay: print JSON lines, one object per entry or run, then the final state."),
            .option(
                "hooks-dir", value: "directory", help: "A hook directory, highest priority first (repeatable).",
                repeating: true, default: "/etc/netdevd/hooks.d and /usr/lib/netdevd/hooks.d"),
            .option(
                "hook-runner", value: "socket",
                help:
                    "The hook runner's socket (netdevd-hooks.socket); without it netdevd starts a runner of its own "
                    + "as its child.",
                default: "a runner of its own"),
            .flag(
                "serve-hooks",
                help:
                    "Be the hook runner: start the hooks netdevd asks for, on standard input or a socket from systemd.",
                hidden: true),
            .option(
                "peer-unit", value: "unit", help: "With --serve-hooks: the unit a peer must run in.", hidden: true),
            .option("receive-buffer", value: "bytes", help: "The monitors' receive buffer in bytes.", hidden: true),
            .option(
                "hook-kill-grace", value: "milliseconds", help: "Milliseconds between a hook's SIGTERM and SIGKILL.",
                hidden: true),
            .option(
                "monitor-buffer", value: "bytes", help: "Bytes of replies a control client may leave unread.",
                hidden: true),
            .flag("print-catalog", help: "Print the journal catalog of netdevd's MESSAGE_IDs and exit.", hidden: true),
            .flag(
                "check-config",
                help:
                    "Read the configuration (FILE, or --config) and its drop-ins, print every problem with its file "
                    + "and line, and exit: 0 when there is none, 1 otherwise."),
        ],
        arguments: [ArgumentSpec("file", help: "With --check-config: the file to check.", optional: true)]
    )

    var config = "/etc/netdevd/netdevd.conf"
    var socket = "/run/netdevd/io.netdevd"
    var udevSource = UdevSource.auto
    var logTarget: JournalTarget?
    var logLevel = LogPriority.info
    var record: String?
    var replay: String?
    var json = false
    var hooksDirectories = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"]
    var receiveBuffer = 128 * 1024 * 1024
    var hookKillGrace = 5_000
    var monitorBuffer = 4 << 20
    var printCatalog = false
    var checkConfig = false
    var hookRunner: String?
    var serveHooks = false
    var peerUnit: String?

    /// Parses the command line and runs; exits 0 (stopped, help, version), 1 (could not start), 64 (usage) or 78
    /// (a configuration that cannot be read at all: `RestartPreventExitStatus=` in the unit, so no restart loop).
    static func main() -> Never {
        let command: NetdevdCommand
        do throws(UsageError) {
            let parsed = try spec.parse(Array(CommandLine.arguments.dropFirst()))
            switch parsed.request {
            case .help:
                print(spec.help(), terminator: "")
                exit(0)
            case .version:
                print(version)
                exit(0)
            case nil:
                command = try NetdevdCommand(parsed)
            }
        } catch {
            writeToStandardError("\(error)\n")
            exit(64)
        }
        exit(command.run())
    }

    init(_ parsed: ParsedCommand) throws(UsageError) {
        func number(_ name: String, _ fallback: Int) throws(UsageError) -> Int {
            guard let text = parsed.value(name) else { return fallback }
            guard let value = Int(text), value >= 0 else {
                throw UsageError(
                    Self.spec, "The value '\(text)' is invalid for '--\(name)': it is a number of 0 or more")
            }
            return value
        }
        config = parsed.value("config") ?? config
        socket = parsed.value("socket") ?? socket
        udevSource = parsed.value("udev-source").flatMap(UdevSource.init(rawValue:)) ?? .auto
        switch parsed.value("log-target") {
        case "journal": logTarget = .journal
        case "console": logTarget = isatty(STDERR_FILENO) == 1 ? .readableStandardError : .prefixedStandardError
        default: logTarget = nil
        }
        let levels: [String: LogPriority] = [
            "error": .error, "warning": .warning, "notice": .notice, "info": .info, "debug": .debug,
        ]
        logLevel = parsed.value("log-level").flatMap { levels[$0] } ?? .info
        record = parsed.value("record")
        replay = parsed.value("replay")
        json = parsed.flag("json")
        if !parsed.values("hooks-dir").isEmpty {
            // Without a trailing '/': an event's directory is the hook directory's sibling, not inside it.
            hooksDirectories = parsed.values("hooks-dir").map { directory in
                var trimmed = Substring(directory)
                while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
                return String(trimmed)
            }
        }
        receiveBuffer = try number("receive-buffer", receiveBuffer)
        hookKillGrace = try number("hook-kill-grace", hookKillGrace)
        monitorBuffer = try number("monitor-buffer", monitorBuffer)
        printCatalog = parsed.flag("print-catalog")
        checkConfig = parsed.flag("check-config")
        hookRunner = parsed.value("hook-runner")
        serveHooks = parsed.flag("serve-hooks")
        peerUnit = parsed.value("peer-unit")
        if let file = parsed.argument("file") {
            guard checkConfig else {
                throw UsageError(
                    Self.spec, "netdevd takes no argument ('\(file)'); the file to check goes with --check-config")
            }
            config = file
        }
    }

    func run() -> Int32 {
        if printCatalog {
            print(MessageKind.journalCatalog, terminator: "")
            return 0
        }
        if let replay {
            return replayRecording(replay)
        }
        if checkConfig {
            return checkConfiguration()
        }
        if serveHooks {
            var options = HookRunnerOptions()
            options.hookDirectories = hooksDirectories
            options.configurationFile = config
            options.peerUnit = peerUnit
            options.logTarget = logTarget
            return HookRunnerProgram(options: options).run()
        }
        var options = DaemonOptions()
        options.configurationFile = config
        options.socketPath = socket
        options.udevSource = udevSource
        options.logTarget = logTarget
        options.maximumPriority = logLevel
        options.recordFile = record
        options.hookDirectories = hooksDirectories
        options.receiveBufferBytes = receiveBuffer
        options.hookKillGraceMilliseconds = hookKillGrace
        options.monitorBufferBytes = monitorBuffer
        if let hookRunner {
            options.hookRunner = .socket(hookRunner)
        } else {
            options.hookRunner = .child(executable: Self.executablePath(), arguments: runnerArguments())
        }
        return Daemon(options: options).run()
    }
}

extension NetdevdCommand {
    /// This program's file, for starting the hook runner from it.
    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return CommandLine.arguments.first ?? "netdevd" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The command line of a hook runner of netdevd's own: the same directories, configuration and log target.
    func runnerArguments() -> [String] {
        var arguments = ["--serve-hooks", "--config", config]
        for directory in hooksDirectories { arguments += ["--hooks-dir", directory] }
        switch logTarget {
        case .journal: arguments += ["--log-target", "journal"]
        case .readableStandardError, .prefixedStandardError: arguments += ["--log-target", "console"]
        case nil: break
        }
        return arguments
    }

    /// `--check-config [FILE]`, as `sshd -t` or `systemd-analyze verify`: every problem on standard output, one per
    /// line with its file and line; exit 0 without any, 1 with warnings or errors.
    func checkConfiguration() -> Int32 {
        let loader = ConfigurationLoader(mainFile: config)
        switch loader.load() {
        case .loaded(_, let warnings) where warnings.isEmpty:
            print("\(config): no problems")
            return 0
        case .loaded(_, let warnings):
            for warning in warnings { print("\(warning) (netdevd runs without it)") }
            print("\(quantity(warnings.count, "warning")): netdevd ignores those lines and runs")
            return 1
        case .rejected(let errors):
            for error in errors { print(error) }
            print("\(quantity(errors.count, "error")): netdevd does not start with this configuration (exit 78)")
            return 1
        }
    }

    /// `--replay FILE`: nothing is started, watched or run; the output goes to standard output.
    func replayRecording(_ path: String) -> Int32 {
        let recording: Recording
        do {
            recording = try Recording(contentsOf: path)
        } catch {
            writeToStandardError("netdevd: cannot replay \(error)\n")
            return 1
        }
        if recording.earlierRuns > 0 {
            writeToStandardError(
                "netdevd: \(path) holds \(recording.earlierRuns + 1) runs of netdevd; replaying the last one\n")
        }
        if recording.configuration == nil {
            writeToStandardError("netdevd: \(path) does not say its configuration; replaying with the defaults\n")
        }
        let replay = OfflineReplay(recording, maximumPriority: logLevel)
        print(json ? replay.jsonLines : replay.text, terminator: "")
        return 0
    }
}
