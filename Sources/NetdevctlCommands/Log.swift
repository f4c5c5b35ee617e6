import CommandOptions
import JSONCoding
import NetdevWire
import Syslog
import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// `netdevctl log [LINK|DEVICE] [-n N] [--since TIME] [-f]`: netdevd's journal entries, all of them or those about
/// one link or device.
struct LogCommand: NetdevctlCommand {
    static let name = "log"
    static let abstract = "Show netdevd's journal entries, for one link or device or all."
    static let discussion = """
        Entries are netdevd's own (its SYSLOG_IDENTIFIER or its unit), never another program's. A LINK matches
        NETDEVD_IFNAME and the device of that name; a DEVICE is a name under /sys/class (ttyUSB0, sda) or a
        path (/sys/devices/... or /devices/...). Reading the host's journal takes root, or membership of the
        'systemd-journal' or 'adm' group.
        """
    static let arguments = [ArgumentSpec("subject", help: "A link or device name, or a device path.", optional: true)]
    static let options = [
        OptionSpec.option("lines", short: "n", value: "count", help: "Show at most this many of the newest entries."),
        .option("since", value: "time", help: "Only entries from this time on. \(JournalTime.forms)"),
        .flag("follow", short: "f", help: "Go on printing new entries until interrupted (Ctrl-C)."),
        .option("directory", value: "path", help: "Read the journal files in this directory instead of the host's."),
    ]

    var view: JournalView
    var follow: Bool
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) throws(UsageError) {
        view = try JournalView(parsed, spec: Self.spec)
        follow = parsed.flag("follow")
        // As journalctl -f: the last 10 before following, unless -n says otherwise.
        if follow, view.count == nil, view.since == nil { view.count = 10 }
        self.options = options
    }

    func run() throws {
        guard view.permitted else {
            // On standard error: standard output stays what a script parses (empty here).
            writeToStandardError(JournalView.notPermitted + "\n")
            return
        }
        let reader = try view.open()
        let records = try view.read(reader)
        if records.isEmpty, !follow, options.json == .off {
            print(view.subject.map { "-- No entries about '\($0)' --" } ?? "-- No entries --")
        }
        for record in records { show(record) }
        guard follow else { return }
        // Following ends by a signal, or once nobody reads the output (`| head -1`): one blocked or ignored by whoever
        // started netdevctl must still end it.
        var ending = sigset_t()
        sigemptyset(&ending)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] {
            sigaddset(&ending, signal)
            Glibc.signal(signal, SIG_DFL)
        }
        pthread_sigmask(SIG_UNBLOCK, &ending, nil)
        while fflush(nil) == 0 {
            try reader.wait(timeoutMicroseconds: UInt64.max)
            while let record = try reader.next() { show(record) }
        }
    }
}

extension LogCommand {
    /// One entry, as a line or (with `--json`) as one JSON object.
    private func show(_ record: JournalRecord) {
        if !options.printJSON(view.object(record)) { print(view.line(record)) }
    }
}
