public import Syslog

/// Every kind of journal entry the session writes, each with a fixed 128-bit `MESSAGE_ID` and a one-line
/// explanation. This is the one list; the journal catalog (`journalctl -x`) is generated from it, and operators
/// filter on the ids (`journalctl MESSAGE_ID=...`). Never change an id once released.
public enum MessageKind: String, Codable, Sendable, CaseIterable {
    /// netdevd enumerated links and devices and is ready (READY=1 was sent).
    case started
    /// netdevd received SIGTERM or SIGINT and is stopping; queued hook runs are dropped.
    case stopping
    /// netdevd stopped; running hooks finished or were cancelled.
    case stopped
    /// The configuration was re-read and is now in force.
    case reloaded
    /// The configuration could not be read; the previous one stays in force.
    case reloadFailed
    /// A monitor lost events (receive buffer overflow); the state is being re-read.
    case resyncStarted
    /// The state was re-read after lost events; the model matches the kernel again.
    case resynced
    /// Reading the current links or devices failed; it is retried.
    case enumerationFailed
    /// The kernel kept changing what netdevd read (every dump interrupted); the last reading is kept, read again later.
    case changedWhileRead
    /// Links and devices were read again after the kernel had kept changing them; the model matches the kernel.
    case reread
    /// A network link appeared.
    case linkAdded
    /// A network link disappeared.
    case linkRemoved
    /// A link's operational state (networkd's words) changed.
    case linkStateChanged
    /// An IP address was added to a link.
    case addressAdded
    /// An IP address was removed from a link.
    case addressRemoved
    /// A default route was added.
    case routeAdded
    /// A default route was removed.
    case routeRemoved
    /// A device of a tracked subsystem appeared.
    case deviceAdded
    /// A device of a tracked subsystem disappeared.
    case deviceRemoved
    /// A device of a tracked subsystem changed.
    case deviceChanged
    /// A device was renamed or moved to another sysfs path (udev's `move`).
    case deviceMoved
    /// A link was renamed.
    case linkRenamed
    /// The host's online state (offline, partial, online) changed.
    case onlineStateChanged
    /// A queued hook run was dropped: a newer run of its subject replaced it, or an added and a removed cancelled.
    case hookRunDropped
    /// The hooks for an event ran and exited successfully.
    case hookRunFinished
    /// A hook exited with an error, was killed, or timed out.
    case hookRunFailed
    /// Running hooks were cancelled because the stop timeout passed.
    case hookRunsCancelled
    /// The configuration has a problem that did not stop it from loading.
    case configurationWarning

    /// The `MESSAGE_ID`, 32 lower-case hex digits.
    public var id: String {
        switch self {
        case .started: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a01"
        case .stopping: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a02"
        case .stopped: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a03"
        case .reloaded: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a04"
        case .reloadFailed: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a05"
        case .resyncStarted: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a06"
        case .resynced: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a07"
        case .enumerationFailed: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a08"
        case .changedWhileRead: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a09"
        case .reread: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a0a"
        case .linkAdded: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a11"
        case .linkRemoved: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a12"
        case .linkStateChanged: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a13"
        case .addressAdded: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a14"
        case .addressRemoved: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a15"
        case .routeAdded: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a16"
        case .routeRemoved: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a17"
        case .deviceAdded: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a21"
        case .deviceRemoved: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a22"
        case .deviceChanged: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a23"
        case .deviceMoved: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a24"
        case .linkRenamed: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a18"
        case .onlineStateChanged: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a31"
        case .hookRunDropped: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a41"
        case .hookRunFinished: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a42"
        case .hookRunFailed: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a43"
        case .hookRunsCancelled: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a44"
        case .configurationWarning: "4d0b1a6f8e2c4b7e9a31c5d2e7f80a51"
        }
    }

    /// What the entry means, in one line, for the catalog.
    public var explanation: String {
        switch self {
        case .started: "netdevd enumerated links and devices and is ready (READY=1 was sent)."
        case .stopping: "netdevd received SIGTERM or SIGINT and is stopping; queued hook runs are dropped."
        case .stopped: "netdevd stopped; running hooks finished or were cancelled."
        case .reloaded: "The configuration was re-read and is now in force."
        case .reloadFailed: "The configuration could not be read; the previous one stays in force."
        case .resyncStarted: "A monitor lost events (receive buffer overflow); the state is being re-read."
        case .resynced: "The state was re-read after lost events; the model matches the kernel again."
        case .enumerationFailed: "Reading the current links or devices failed; it is retried."
        case .changedWhileRead:
            "The kernel changed its links, addresses or routes while netdevd read them, on every try; the last reading "
                + "is kept, with the changes that arrived meanwhile, and everything is read again a little later."
        case .reread: "Links and devices were read again after the kernel had changed them while they were read."
        case .linkAdded: "A network link appeared."
        case .linkRemoved: "A network link disappeared."
        case .linkStateChanged: "A link's operational state (networkd's words) changed."
        case .addressAdded: "An IP address was added to a link."
        case .addressRemoved: "An IP address was removed from a link."
        case .routeAdded: "A default route was added."
        case .routeRemoved: "A default route was removed."
        case .deviceAdded: "A device of a tracked subsystem appeared."
        case .deviceRemoved: "A device of a tracked subsystem disappeared."
        case .deviceChanged: "A device of a tracked subsystem changed."
        case .deviceMoved:
            "A device of a tracked subsystem was renamed or moved (udev's move event): its old sysfs path is gone "
                + "and the device lives on under the new one."
        case .linkRenamed: "A network link was renamed; its index stays the same."
        case .onlineStateChanged: "The host's online state (offline, partial, online) changed."
        case .hookRunDropped:
            "Queued hook runs were dropped before they ran: a newer run of the same subject replaced them, or a "
                + "subject was added and removed again before its added run."
        case .hookRunFinished: "The hooks for an event ran and exited successfully."
        case .hookRunFailed: "A hook exited with an error, was killed, or timed out."
        case .hookRunsCancelled:
            "Hooks still running at the stop were killed (SIGKILL): the stop timeout passed, or a second signal came."
        case .configurationWarning: "The configuration has a problem that did not stop it from loading."
        }
    }
}

extension MessageKind {
    /// The catalog's `Subject:` line: what happened, in a few words.
    public var subject: String {
        switch self {
        case .started: "netdevd is ready"
        case .stopping: "netdevd is stopping"
        case .stopped: "netdevd stopped"
        case .reloaded: "netdevd reloaded its configuration"
        case .reloadFailed: "netdevd could not reload its configuration"
        case .resyncStarted: "netdevd lost events and is re-reading the state"
        case .resynced: "netdevd re-read the state after lost events"
        case .enumerationFailed: "netdevd could not read the current links or devices"
        case .changedWhileRead: "The kernel kept changing what netdevd read"
        case .reread: "netdevd read links and devices again"
        case .linkAdded: "Network link @NETDEVD_IFNAME@ appeared"
        case .linkRemoved: "Network link @NETDEVD_IFNAME@ disappeared"
        case .linkStateChanged: "Network link @NETDEVD_IFNAME@ is now @NETDEVD_OPER_STATE@"
        case .addressAdded: "Address @NETDEVD_ADDRESS@ added to @NETDEVD_IFNAME@"
        case .addressRemoved: "Address @NETDEVD_ADDRESS@ removed from @NETDEVD_IFNAME@"
        case .routeAdded: "Default route added on @NETDEVD_IFNAME@"
        case .routeRemoved: "Default route removed from @NETDEVD_IFNAME@"
        case .deviceAdded: "Device appeared"
        case .deviceRemoved: "Device disappeared"
        case .deviceChanged: "Device changed"
        case .deviceMoved: "Device renamed or moved to @NETDEVD_DEVPATH@"
        case .linkRenamed: "Network link renamed to @NETDEVD_IFNAME@"
        case .onlineStateChanged: "The host's online state changed"
        case .hookRunDropped: "Queued hook runs were dropped"
        case .hookRunFinished: "Hooks ran"
        case .hookRunFailed: "A hook failed"
        case .hookRunsCancelled: "Running hooks were killed at the stop"
        case .configurationWarning: "netdevd's configuration has a problem"
        }
    }

    /// What an operator can do about it, when there is something to do.
    var advice: String? {
        switch self {
        case .reloadFailed, .configurationWarning:
            "The entry names the file and line. Fix it, then run `systemctl reload netdevd` (or `netdevctl reload`)."
        case .resyncStarted:
            "Events arrived faster than netdevd read them. Nothing was lost for good: the state is read again."
        case .changedWhileRead:
            "Nothing to do: it happens while the kernel configures many addresses at once (IPv6 duplicate address "
                + "detection on thousands of links). netdevd reads again after 1 s, then waits twice as long each "
                + "time the kernel is still busy, up to 30 s."
        case .enumerationFailed:
            "The entry says which read failed and why; netdevd retries. If it keeps failing, check that the service "
                + "may open netlink sockets (RestrictAddressFamilies=) and that udevd runs."
        case .hookRunFailed:
            "The entry names the hook and its exit status or signal; the hook's last output is logged under its "
                + "name. Run the hook by hand with the NETDEVD_* environment shown in netdevd(8) to reproduce it."
        case .hookRunDropped:
            "Hooks of one subject run one at a time; while one runs, one run waits with the newest state. An "
                + "added run stays an added run, and nothing runs for a subject that came and went meanwhile."
        default: nil
        }
    }

    /// The journal catalog (`/usr/lib/systemd/catalog/netdevd.catalog`, see journalctl(1) `--update-catalog`):
    /// one entry per kind, keyed by its `MESSAGE_ID`.
    public static var journalCatalog: String {
        var text =
            "# The journal catalog of netdevd's messages; generated from MessageKind (netdevd --print-catalog).\n"
        for kind in allCases {
            text += "\n-- \(kind.id)\nSubject: \(kind.subject)\nDefined-By: netdevd\n"
            text += "Documentation: man:netdevd(8)\n\n\(kind.explanation)\n"
            if let advice = kind.advice { text += "\n\(advice)\n" }
        }
        return text
    }
}

/// A journal entry the session asks for: priority, message, kind (and so MESSAGE_ID), and fields.
public struct LogEntry: Codable, Sendable, Equatable {
    /// How important it is (`PRIORITY=`).
    public var priority: LogPriority
    /// The human message.
    public var message: String
    /// The kind, which fixes the MESSAGE_ID.
    public var kind: MessageKind
    /// Structured fields (`NETDEVD_IFNAME`, ...), in order.
    public var fields: [LogField]

    /// An entry.
    public init(priority: LogPriority, message: String, kind: MessageKind, fields: [LogField] = []) {
        self.priority = priority
        self.message = message
        self.kind = kind
        self.fields = fields
    }

    /// The value of the field `name`, if present.
    public func field(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }
}

/// One structured journal field. The documented names are in ``LogField/Name``.
public struct LogField: Codable, Sendable, Equatable {
    /// The field name.
    public var name: String
    /// The value.
    public var value: String

    /// A field.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// The documented field names, filterable with `journalctl NAME=value`.
    public enum Name {
        /// The link's name.
        public static let ifname = "NETDEVD_IFNAME"
        /// The link's index.
        public static let ifindex = "NETDEVD_IFINDEX"
        /// The link's operational state now.
        public static let operState = "NETDEVD_OPER_STATE"
        /// The link's operational state before.
        public static let previousOperState = "NETDEVD_PREV_OPER_STATE"
        /// The host's online state.
        public static let onlineState = "NETDEVD_ONLINE_STATE"
        /// The host's previous online state.
        public static let previousOnlineState = "NETDEVD_PREV_ONLINE_STATE"
        /// An address (`192.0.2.10/24`).
        public static let address = "NETDEVD_ADDRESS"
        /// A gateway.
        public static let gateway = "NETDEVD_GATEWAY"
        /// A device's sysfs path.
        public static let devpath = "NETDEVD_DEVPATH"
        /// A device's sysfs path before it was renamed or moved.
        public static let previousDevpath = "NETDEVD_PREV_DEVPATH"
        /// A link's name before it was renamed.
        public static let previousIfname = "NETDEVD_PREV_IFNAME"
        /// A device's subsystem.
        public static let subsystem = "NETDEVD_SUBSYSTEM"
        /// A hook event (`link-state`, `device-added`, ...).
        public static let hookEvent = "NETDEVD_HOOK_EVENT"
        /// A hook run's id.
        public static let hookRun = "NETDEVD_HOOK_RUN"
        /// A phase (`running`, ...).
        public static let phase = "NETDEVD_PHASE"
        /// How many resyncs happened so far.
        public static let resyncs = "NETDEVD_RESYNCS"
        /// How long a reading's rtnetlink dumps took, in milliseconds.
        public static let kernelReadMilliseconds = "NETDEVD_KERNEL_READ_MSEC"
        /// How long a reading's udev devices took, in milliseconds.
        public static let devicesReadMilliseconds = "NETDEVD_DEVICES_READ_MSEC"
        /// Which monitor overflowed.
        public static let monitor = "NETDEVD_MONITOR"
        /// A configuration file.
        public static let configFile = "NETDEVD_CONFIG_FILE"
        /// A configuration line.
        public static let configLine = "NETDEVD_CONFIG_LINE"
        /// Stale hook runs dropped since the previous summary.
        public static let hookRunsDropped = "NETDEVD_HOOK_RUNS_DROPPED"
        /// Stale hook runs dropped since start.
        public static let staleHookRunsDropped = "NETDEVD_STALE_HOOK_RUNS_DROPPED"
    }
}
