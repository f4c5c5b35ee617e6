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

/// How a hook event coalesces (the session's rules for queued runs).
extension HookEvent {
    /// Where an event stands in its subject's life, which decides how queued runs coalesce. Per subject at most
    /// one run waits, and it carries the newest state:
    /// - `added`, then changes: one `added` run with the newest state;
    /// - `added`, then `removed`, before the `added` ran: neither runs (both counted as dropped);
    /// - changes, then `removed`: one `removed` run;
    /// - changes, then changes: one change with the newest state, from the state the hooks were last told
    ///   about (`NETDEVD_PREV_*`); none when that is the state it is in again (`online-state` alike).
    /// An `added` after a waiting `removed` (a device path used again) waits behind the removal; a change with
    /// no `added` before it is dropped there.
    /// A device that moves takes what waits for its old path along: a waiting `added` runs under the new path, a
    /// waiting change merges into the `device-moved` run, which stays a move through later changes; a move that
    /// cannot be told in order (a run of the old path is running) is the old path's `removed` and the new one's
    /// `added`. Only an `added` ever waits behind a removal.
    public enum Lifecycle: Sendable {
        /// The subject appeared.
        case added
        /// The subject's state changed.
        case changed
        /// The subject went away.
        case removed
    }

    /// Where the event stands in its subject's life.
    public var lifecycle: Lifecycle {
        switch self {
        case .linkAdded, .deviceAdded: .added
        case .linkState, .deviceChanged, .deviceMoved, .onlineState: .changed
        case .linkRemoved, .deviceRemoved: .removed
        }
    }
}

/// One run of the hooks for an event: every hook executable, in lexical order, with the same arguments and
/// environment. The daemon runs it and answers with ``Event/hookRunFinished(_:)``.
///
/// A value that never changes once queued, held in one immutable storage object: the hook queue's persistent
/// tables copy runs whenever a node of theirs is shared, and a copy is then one retain instead of a dozen.
public struct HookRun: Codable, Sendable, Equatable {
    private final class Storage: Sendable {
        let id: Int
        let subject: HookSubject
        let event: HookEvent
        let subjectName: String
        let environment: [LogField]
        let link: Link?
        let device: Device?
        let timeoutMilliseconds: Int

        init(
            id: Int, subject: HookSubject, event: HookEvent, subjectName: String, environment: [LogField],
            link: Link?, device: Device?, timeoutMilliseconds: Int
        ) {
            self.id = id
            self.subject = subject
            self.event = event
            self.subjectName = subjectName
            self.environment = environment
            self.link = link
            self.device = device
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    private let storage: Storage

    /// Unique within a session, increasing.
    public var id: Int { storage.id }
    /// What it is about.
    public var subject: HookSubject { storage.subject }
    /// The event.
    public var event: HookEvent { storage.event }
    /// The subject's name (`eth0`, or the device path), the hooks' second argument.
    public var subjectName: String { storage.subjectName }
    /// The documented `NETDEVD_*` environment (without `NETDEVD_JSON`, which the daemon adds), in order.
    public var environment: [LogField] { storage.environment }
    /// The link or device as it is when the run is queued, for `NETDEVD_JSON`.
    public var link: Link? { storage.link }
    /// The device, for device events.
    public var device: Device? { storage.device }
    /// How long each hook may run, in milliseconds (the configuration's when the run was queued).
    public var timeoutMilliseconds: Int { storage.timeoutMilliseconds }

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
        storage = Storage(
            id: id, subject: subject, event: event, subjectName: subjectName, environment: environment, link: link,
            device: device, timeoutMilliseconds: timeoutMilliseconds)
    }

    private enum CodingKeys: String, CodingKey {
        case id, subject, event, subjectName, environment, link, device, timeoutMilliseconds
    }

    /// Decodes a run.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(Int.self, forKey: .id),
            subject: try container.decode(HookSubject.self, forKey: .subject),
            event: try container.decode(HookEvent.self, forKey: .event),
            subjectName: try container.decode(String.self, forKey: .subjectName),
            environment: try container.decode([LogField].self, forKey: .environment),
            link: try container.decodeIfPresent(Link.self, forKey: .link),
            device: try container.decodeIfPresent(Device.self, forKey: .device),
            timeoutMilliseconds: try container.decode(Int.self, forKey: .timeoutMilliseconds))
    }

    /// Encodes a run with the fields' names.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(subject, forKey: .subject)
        try container.encode(event, forKey: .event)
        try container.encode(subjectName, forKey: .subjectName)
        try container.encode(environment, forKey: .environment)
        try container.encodeIfPresent(link, forKey: .link)
        try container.encodeIfPresent(device, forKey: .device)
        try container.encode(timeoutMilliseconds, forKey: .timeoutMilliseconds)
    }

    /// Runs are equal when every field is.
    public static func == (lhs: HookRun, rhs: HookRun) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.id == rhs.id && lhs.subject == rhs.subject && lhs.event == rhs.event
                && lhs.subjectName == rhs.subjectName && lhs.environment == rhs.environment && lhs.link == rhs.link
                && lhs.device == rhs.device && lhs.timeoutMilliseconds == rhs.timeoutMilliseconds)
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
    /// It was started, and how it ended is unknown: the hook runner went away while it ran (the reason).
    case lost(String)
}

extension HookExitStatus {
    /// How it ended, in words: `exited with status 1`, `timed out`, `not started (reason)`.
    public var summary: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .killed(let signal): "killed by signal \(signal)"
        case .timedOut: "timed out"
        case .notStarted(let reason): "not started (\(reason))"
        case .lost(let reason): "lost (\(reason))"
        }
    }
}

/// The hook queue: per subject at most one run running and one waiting (which carries the newest state; see
/// ``HookEvent/Lifecycle`` for how runs coalesce), and at most `parallelism` subjects running at once. A subject
/// whose removal waits can have one more run waiting behind it: a new subject under the same device path (a
/// veth deleted and created again) must not be merged into the old one's removal. Pure bookkeeping, no I/O.
public struct HookQueue: Codable, Sendable, Equatable {
    /// Runs in progress, by subject.
    public var running: TreeDictionary<HookSubject, HookRun> = [:]
    /// The next run per subject, waiting for the subject's current run or for a free slot.
    public var waiting: TreeDictionary<HookSubject, HookRun> = [:]
    /// A run of a new subject under the name of one whose removal is waiting: it waits for that removal to start.
    public var following: TreeDictionary<HookSubject, HookRun> = [:]
    /// The subjects of the waiting runs that can start (their subject is not running) by run id. Ids only increase,
    /// so this is the order the runs were queued in (slots are given out fairly), kept in a persistent table so that
    /// queueing a run never copies the queue. A run waiting for its subject's run to end joins it at that end: every
    /// run it holds can start, so the search for the oldest passes each id once.
    public var queued: TreeDictionary<Int, HookSubject> = [:]
    /// No run in ``queued`` has a smaller id: where the search for the oldest one starts.
    public var oldestQueued = 0
    /// Runs dropped since the journal last counted them.
    public var droppedSinceSummary = 0

    /// An empty queue.
    public init() {}

    /// `true` when nothing runs or waits.
    public var isIdle: Bool {
        running.isEmpty && waiting.isEmpty
    }

    /// How many runs wait.
    public var waitingCount: Int {
        waiting.count + following.count
    }

    /// The newest run waiting for `subject`: the one new events of the subject coalesce with.
    func newestWaiting(for subject: HookSubject) -> HookRun? {
        following[subject] ?? waiting[subject]
    }

    /// Queues `run` as its subject's newest.
    mutating func append(_ run: HookRun) {
        // Only an added run follows a removal, and one arriving while another follows replaces it (coalesce).
        assert(following[run.subject] == nil || waiting[run.subject] == nil, "a following run overwritten")
        if waiting[run.subject] == nil {
            waiting[run.subject] = run
            if running[run.subject] == nil { queued[run.id] = run.subject }
        } else {
            following[run.subject] = run
        }
    }

    /// Removes a waiting run (one of ``newestWaiting(for:)``'s answers).
    mutating func remove(_ run: HookRun) {
        if following[run.subject]?.id == run.id {
            following[run.subject] = nil
        } else if waiting[run.subject]?.id == run.id {
            waiting[run.subject] = nil
            queued[run.id] = nil
            if let next = following.removeValue(forKey: run.subject) {
                append(next)
            }
        }
    }

    /// Starts the run waiting for `subject` when the subject is not running, and returns it; a run following it
    /// becomes the waiting one, held until this one ends.
    mutating func start(_ subject: HookSubject) -> HookRun? {
        guard running[subject] == nil, let run = waiting[subject] else { return nil }
        running[subject] = run
        remove(run)
        return run
    }

    /// Ends `subject`'s run; returns the run that waited for it to end, which can start now, and which ``queued``
    /// holds from now on.
    mutating func finish(_ subject: HookSubject) -> HookRun? {
        running[subject] = nil
        guard let run = waiting[subject] else { return nil }
        queued[run.id] = subject
        return run
    }

    /// Drops every waiting run (at the stop); returns how many there were.
    mutating func removeAllWaiting() -> Int {
        defer {
            waiting = [:]
            following = [:]
            queued = [:]
        }
        return waitingCount
    }
}
