public import HashTreeCollections

/// What a hook run is about: one link or one device. Runs of one subject are serial and in order.
public enum HookSubject: Codable, Sendable, Hashable, CustomStringConvertible {
    /// A link, by index (names can change).
    case link(index: Int32)
    /// A device, by sysfs path.
    case device(syspath: String)
    /// The host's online state.
    case host

    /// `link 3`, `device /sys/...`, `host`.
    public var description: String {
        switch self {
        case .link(let index): "link \(index)"
        case .device(let syspath): "device \(syspath)"
        case .host: "host"
        }
    }
}

/// The event a hook run reports, its first argument and `NETDEVD_EVENT`.
public enum HookEvent: String, Codable, Sendable, CaseIterable {
    /// A link appeared.
    case linkAdded = "link-added"
    /// A link's operational state changed.
    case linkState = "link-state"
    /// A link disappeared.
    case linkRemoved = "link-removed"
    /// A tracked device appeared.
    case deviceAdded = "device-added"
    /// A tracked device changed.
    case deviceChanged = "device-changed"
    /// A tracked device disappeared.
    case deviceRemoved = "device-removed"
    /// The host's online state changed.
    case onlineState = "online-state"
}

/// One run of the hooks for an event: every hook executable, in lexical order, with the same arguments and
/// environment. The daemon runs it and answers with ``Event/hookRunFinished(_:)``.
public struct HookRun: Codable, Sendable, Equatable {
    /// Unique within a session, increasing.
    public var id: Int
    /// What it is about.
    public var subject: HookSubject
    /// The event.
    public var event: HookEvent
    /// The subject's name (`eth0`, or the device path), the hooks' second argument.
    public var subjectName: String
    /// The documented `NETDEVD_*` environment (without `NETDEVD_JSON`, which the daemon adds), in order.
    public var environment: [LogField]
    /// The link or device as it is when the run is queued, for `NETDEVD_JSON`.
    public var link: Link?
    /// The device, for device events.
    public var device: Device?
    /// How long each hook may run, in milliseconds (the configuration's when the run was queued).
    public var timeoutMilliseconds: Int

    /// A hook run.
    public init(
        id: Int,
        subject: HookSubject,
        event: HookEvent,
        subjectName: String,
        environment: [LogField],
        link: Link? = nil,
        device: Device? = nil,
        timeoutMilliseconds: Int = 30_000
    ) {
        self.timeoutMilliseconds = timeoutMilliseconds
        self.id = id
        self.subject = subject
        self.event = event
        self.subjectName = subjectName
        self.environment = environment
        self.link = link
        self.device = device
    }
}

/// How a hook run ended, as the daemon reports it.
public struct HookRunResult: Codable, Sendable, Equatable {
    /// The run's id.
    public var runID: Int
    /// Per hook executable, in the order they ran.
    public var hooks: [HookOutcome]

    /// A result.
    public init(runID: Int, hooks: [HookOutcome]) {
        self.runID = runID
        self.hooks = hooks
    }

    /// `true` when every hook exited 0.
    public var succeeded: Bool {
        hooks.allSatisfy { $0.status == .exited(0) }
    }
}

/// How one hook executable ended.
public struct HookOutcome: Codable, Sendable, Equatable {
    /// The hook's file name.
    public var name: String
    /// How it ended.
    public var status: HookExitStatus
    /// How long it ran, in milliseconds.
    public var durationMilliseconds: Int
    /// The last lines of its output (bounded by the daemon).
    public var outputTail: String

    /// An outcome.
    public init(name: String, status: HookExitStatus, durationMilliseconds: Int, outputTail: String = "") {
        self.name = name
        self.status = status
        self.durationMilliseconds = durationMilliseconds
        self.outputTail = outputTail
    }
}

/// How a hook process ended.
public enum HookExitStatus: Codable, Sendable, Equatable {
    /// It exited with this status.
    case exited(Int32)
    /// A signal killed it.
    case killed(signal: Int32)
    /// It ran past its timeout and was stopped.
    case timedOut
    /// It could not be started (the reason).
    case notStarted(String)
}

/// The hook queue: per subject at most one run running and at most one waiting (newer state replaces older),
/// and at most `parallelism` subjects running at once. Pure bookkeeping, no I/O.
public struct HookQueue: Codable, Sendable, Equatable {
    /// Runs in progress, by subject.
    public var running: TreeDictionary<HookSubject, HookRun> = [:]
    /// The next run per subject, waiting for the subject's current run or for a free slot.
    public var waiting: TreeDictionary<HookSubject, HookRun> = [:]
    /// Subjects in the order their waiting runs were queued, so slots are given out fairly.
    public var order: [HookSubject] = []
    /// Stale runs dropped since the journal last summarised them (once the queue is idle).
    public var droppedSinceSummary = 0

    /// An empty queue.
    public init() {}

    /// `true` when nothing runs or waits.
    public var isIdle: Bool {
        running.isEmpty && waiting.isEmpty
    }
}
