/// Everything that can happen to a session: what the kernel, udev, signals, clients, timers and hooks report.
/// Events carry full state (a link event holds the whole link), so replaying them is idempotent.
public enum Event: Codable, Sendable, Equatable {
    /// The enumeration with this generation finished: the state of links and devices now.
    case enumerated(generation: Int, snapshot: Snapshot)
    /// The enumeration with this generation failed (the reason, for the journal).
    case enumerationFailed(generation: Int, reason: String)
    /// rtnetlink: a link appeared or changed.
    case linkChanged(LinkState)
    /// rtnetlink: a link was removed.
    case linkRemoved(index: Int32)
    /// rtnetlink: an address was added to the link `index`.
    case addressAdded(index: Int32, LinkAddress)
    /// rtnetlink: an address was removed from the link `index`.
    case addressRemoved(index: Int32, LinkAddress)
    /// rtnetlink: a default route through the link `index` was added.
    case defaultRouteAdded(index: Int32, DefaultRoute)
    /// rtnetlink: a default route through the link `index` was removed.
    case defaultRouteRemoved(index: Int32, DefaultRoute)
    /// udev: a device appeared or changed (`action` is udev's: `add`, `change`, `bind`, ...).
    case deviceChanged(Device, action: String)
    /// udev: a device was removed.
    case deviceRemoved(syspath: String)
    /// udev: a device was renamed or moved (`move`): it is now `device`, and `fromSyspath` is gone.
    case deviceMoved(Device, fromSyspath: String)
    /// A monitor lost events (its receive buffer overflowed).
    case monitorOverflowed(source: MonitorSource)
    /// A signal arrived.
    case signalReceived(Signal)
    /// A control-socket client asked for a reload (who, for the journal).
    case reloadRequested(by: String)
    /// The configuration was read (with warnings that did not stop it).
    case configurationLoaded(Configuration, warnings: [Diagnostic])
    /// The configuration could not be read; these are the errors.
    case configurationRejected([Diagnostic])
    /// The watchdog interval's half passed.
    case watchdogTick
    /// A timer the session started fired.
    case timerFired(TimerID)
    /// A hook run ended.
    case hookRunFinished(HookRunResult)
    /// The hook directories were looked at: `true` when a hook of some event (or a file refused as one) is in them,
    /// `false` when none is. While none is, no hook run is queued (``Model/hooksInstalled``).
    case hooksInstalled(Bool)
    /// systemd-networkd's state files were read: `running` when its state directory exists, with each link's
    /// administrative state by index (the networkd-dispatcher compatibility's `AdministrativeState`).
    case networkdStatesRead(running: Bool, administrative: [Int32: String])
    /// networkd wrote (or, `nil`, removed) the state file of the link at `index`.
    case networkdStateChanged(index: Int32, administrative: String?)
}

/// The state read by an enumeration: every link (with addresses and default routes) and every tracked device.
public struct Snapshot: Codable, Sendable, Equatable {
    /// The links.
    public var links: [Link]
    /// The devices of the tracked subsystems.
    public var devices: [Device]
    /// What the kernel kept changing while it was read (`RTM_GETADDR`, ...): the snapshot holds the last reading of
    /// it, which may lack an entry that did not change, so the session reads again later. Empty when consistent.
    public var changedWhileRead: [String]
    /// How long the reading took, when the adapter measured it: said in the journal, never decides anything.
    public var readTimes: ReadTimes?

    /// A snapshot.
    public init(links: [Link], devices: [Device], changedWhileRead: [String] = [], readTimes: ReadTimes? = nil) {
        self.links = links
        self.devices = devices
        self.changedWhileRead = changedWhileRead
        self.readTimes = readTimes
    }

    private enum CodingKeys: String, CodingKey {
        case links, devices, changedWhileRead, readTimes
    }

    /// Decodes a snapshot; one recorded before ``changedWhileRead`` existed was consistent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        links = try container.decode([Link].self, forKey: .links)
        devices = try container.decode([Device].self, forKey: .devices)
        changedWhileRead = try container.decodeIfPresent([String].self, forKey: .changedWhileRead) ?? []
        readTimes = try container.decodeIfPresent(ReadTimes.self, forKey: .readTimes)
    }
}

/// How long a snapshot's two readings took (they run at the same time): so an operator of a large host sees where
/// a start's time went.
public struct ReadTimes: Codable, Sendable, Equatable {
    /// The rtnetlink dumps: links, addresses, routes.
    public var kernelMilliseconds: Int
    /// udev's devices of the tracked subsystems.
    public var devicesMilliseconds: Int

    /// The two durations, in milliseconds.
    public init(kernelMilliseconds: Int, devicesMilliseconds: Int) {
        self.kernelMilliseconds = kernelMilliseconds
        self.devicesMilliseconds = devicesMilliseconds
    }
}

/// Which monitor reported lost events.
public enum MonitorSource: String, Codable, Sendable, CaseIterable {
    /// The udev monitor.
    case udev
    /// The rtnetlink watcher.
    case netlink
}

/// The signals the session acts on.
public enum Signal: String, Codable, Sendable, CaseIterable {
    /// SIGTERM: stop.
    case terminate = "SIGTERM"
    /// SIGINT: stop.
    case interrupt = "SIGINT"
    /// SIGHUP: reload the configuration.
    case hangUp = "SIGHUP"
}

/// A problem found in the configuration, with the place it is at.
public struct Diagnostic: Codable, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// The line (1-based), 0 when the problem is the file as a whole.
    public var line: Int
    /// What is wrong, and what to do.
    public var message: String

    /// A diagnostic.
    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `file:line: message`.
    public var description: String {
        line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
    }
}

/// The timers a session starts.
public enum TimerID: Codable, Sendable, Hashable {
    /// A link's state must hold until this fires before its hooks run.
    case debounce(HookSubject)
    /// The stop waited long enough for running hooks.
    case stopDeadline
    /// A link that appeared while networkd runs waited long enough for networkd's state file: its scripts run
    /// without it.
    case networkdWait(index: Int32)
    /// Time to try a failed enumeration again.
    case retryEnumeration
    /// Time to read links and devices again: the kernel kept changing them while they were last read.
    case reread
    /// Time to count the hook runs dropped since the last count in one journal entry.
    case dropSummary
}
