import ArgumentParser
import NetdevDaemon
import NetdevSession
import NetdevWire
import Systemd
import Udev

#if canImport(Glibc)
import Glibc
#endif

/// `netdevd`: watches network links and devices, tells systemd and the journal, runs hooks.
struct NetdevdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netdevd",
        abstract: "Watch network links and devices; log every change, tell systemd, run hooks.",
        discussion: """
            Runs in the foreground. Under systemd it is a Type=notify service; at a terminal it logs readable \
            lines. Configuration: /etc/netdevd/netdevd.conf and netdevd.conf.d/*.conf (see netdevd.conf(5)).
            Signals: SIGHUP reloads the configuration, SIGTERM and SIGINT stop.
            """,
        version: "0.1.0"
    )

    @Option(help: "The configuration file; drop-ins are read from <file>.d/.")
    var config = "/etc/netdevd/netdevd.conf"

    @Option(help: "The control socket's path.")
    var socket = "/run/netdevd/io.netdevd"

    @Option(help: "The uevent source: auto (udev while udevd runs, kernel while it does not), udev or kernel.")
    var udevSource: UdevSourceOption = .auto

    @Option(help: "Where to log: auto, journal or console.")
    var logTarget: LogTarget = .auto

    @Option(help: "The lowest level logged: debug, info, notice, warning or error.")
    var logLevel: LogLevel = .info

    @Option(help: "Append every processed event to this file as JSON lines, for replay.")
    var record: String?

    @Option(
        help: ArgumentHelp(
            "Run a --record file through the session offline and print the journal entries and hook runs it makes.",
            valueName: "file"))
    var replay: String?

    @Flag(help: "With --replay: print JSON lines, one object per entry or run, then the final state.")
    var json = false

    @Option(name: .customLong("hooks-dir"), help: "A hook directory, highest priority first (repeatable).")
    var hooksDirectories: [String] = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"]

    @Option(help: ArgumentHelp("The monitors' receive buffer in bytes.", visibility: .hidden))
    var receiveBuffer = 128 * 1024 * 1024

    @Option(help: ArgumentHelp("Milliseconds between a hook's SIGTERM and SIGKILL.", visibility: .hidden))
    var hookKillGrace = 5_000

    @Option(help: ArgumentHelp("Bytes of replies a control client may leave unread.", visibility: .hidden))
    var monitorBuffer = 4 << 20

    @Flag(help: ArgumentHelp("Print the journal catalog of netdevd's MESSAGE_IDs and exit.", visibility: .hidden))
    var printCatalog = false

    func run() throws {
        if printCatalog {
            print(MessageKind.journalCatalog, terminator: "")
            return
        }
        if let replay {
            try replayRecording(replay)
            return
        }
        var options = DaemonOptions()
        options.configurationFile = config
        options.socketPath = socket
        options.udevSource = UdevSource(rawValue: udevSource.rawValue) ?? .auto
        options.logTarget = logTarget.target
        options.maximumPriority = logLevel.priority
        options.recordFile = record
        options.hookDirectories = hooksDirectories
        options.receiveBufferBytes = receiveBuffer
        options.hookKillGraceMilliseconds = hookKillGrace
        options.monitorBufferBytes = monitorBuffer
        let status = Daemon(options: options).run()
        throw ExitCode(status)
    }
}

extension NetdevdCommand {
    /// `--replay FILE`: nothing is started, watched or run; the output goes to standard output.
    func replayRecording(_ path: String) throws {
        let recording: Recording
        do {
            recording = try Recording(contentsOf: path)
        } catch {
            writeToStandardError("netdevd: cannot replay \(error)\n")
            throw ExitCode(1)
        }
        if recording.earlierRuns > 0 {
            writeToStandardError(
                "netdevd: \(path) holds \(recording.earlierRuns + 1) runs of netdevd; replaying the last one\n")
        }
        if recording.configuration == nil {
            writeToStandardError("netdevd: \(path) does not say its configuration; replaying with the defaults\n")
        }
        let replay = OfflineReplay(recording, maximumPriority: logLevel.priority)
        print(json ? replay.jsonLines : replay.text, terminator: "")
    }
}

/// `--udev-source`.
enum UdevSourceOption: String, ExpressibleByArgument, CaseIterable {
    case auto, udev, kernel
}

/// `--log-target`.
enum LogTarget: String, ExpressibleByArgument, CaseIterable {
    case auto, journal, console

    var target: JournalTarget? {
        switch self {
        case .auto: nil
        case .journal: .journal
        case .console: isatty(STDERR_FILENO) == 1 ? .readableStandardError : .prefixedStandardError
        }
    }
}

/// `--log-level`.
enum LogLevel: String, ExpressibleByArgument, CaseIterable {
    case debug, info, notice, warning, error

    var priority: Int {
        switch self {
        case .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        }
    }
}
