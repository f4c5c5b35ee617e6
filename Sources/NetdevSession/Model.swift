public import HashTreeCollections
public import Syslog

/// Where a session is in its life. All transitions are decided by ``Session/update(_:_:)``:
/// `starting → enumerating → running ⇄ resyncing`, `running → reloading → running`, any → `stopping → stopped`.
public enum Phase: String, Codable, Sendable, CaseIterable {
    /// Created, not yet initiated.
    case starting
    /// Reading the initial state; events are buffered.
    case enumerating
    /// Ready: events change the model at once.
    case running
    /// Re-reading the state after lost events; events are buffered.
    case resyncing
    /// Re-reading the configuration.
    case reloading
    /// Stopping: no new hook runs; waiting for running ones.
    case stopping
    /// Stopped: the exit effect was issued.
    case stopped
}

/// How a reload ended, for whoever asked for it: the configuration's warnings when it was taken, its errors when
/// it was rejected (the previous one then stays in force). It answers every request numbered up to `covers`.
public struct ReloadOutcome: Codable, Sendable, Equatable {
    /// The highest request number it answers (``Model/reloadRequests`` when the files were read).
    public var covers: Int
    /// Lines ignored, as `file:line: message`.
    public var warnings: [String]
    /// Why it was rejected, as `file:line: message`; empty when it was taken.
    public var errors: [String]

    /// An outcome.
    public init(covers: Int, warnings: [String], errors: [String]) {
        self.covers = covers
        self.warnings = warnings
        self.errors = errors
    }
}

/// Counts an operator asks about: how many resyncs, how many stale hook runs dropped, how many hook runs.
public struct Counters: Codable, Sendable, Equatable {
    /// Re-enumerations after lost events.
    public var resyncs = 0
    /// Queued hook runs that never ran: a newer run of the subject replaced them, or an added and a removed cancelled.
    public var staleHookRunsDropped = 0
    /// Hook runs started.
    public var hookRunsStarted = 0
    /// Hook runs in which a hook failed, was killed or timed out.
    public var hookRunsFailed = 0

    /// All zero.
    public init() {}
}

/// All the state a session decides from. Any valid model is a valid starting point: ``Session/initiate(_:)``
/// re-reads the kernel's state from it.
///
/// The loop, its observers and the control plane all hold models, so the tables are persistent hash trees: a
/// change to one link copies a few tree nodes, never the whole table. The online state is kept as a tally that
/// each link change adjusts, so no event costs a pass over all links; setting ``links`` or ``configuration`` as
/// a whole recounts it.
public struct Model: Codable, Sendable, Equatable {
    /// Where the session is in its life.
    public var phase: Phase
    /// The configuration in force.
    public var configuration: Configuration {
        get { storedConfiguration }
        set {
            storedConfiguration = newValue
            online = OnlineTally(links: storedLinks.values, configuration: newValue)
        }
    }
    /// Links by interface index. Setting it (or a subscript of it) recounts the online state; the session changes
    /// links through ``setLink(_:at:)``, which adjusts it.
    public var links: TreeDictionary<Int32, Link> {
        get { storedLinks }
        set {
            storedLinks = newValue
            online = OnlineTally(links: newValue.values, configuration: storedConfiguration)
        }
    }
    /// Devices of the tracked subsystems by sysfs path. Setting it (or a subscript of it) recounts
    /// ``deviceCounts``; the session changes devices through ``setDevice(_:at:)``, which adjusts it.
    public var devices: TreeDictionary<String, Device> {
        get { storedDevices }
        set {
            storedDevices = newValue
            deviceCounts = Self.counts(of: newValue)
        }
    }
    /// How many devices each subsystem has, kept as devices change: no report counts them over again.
    public private(set) var deviceCounts: [String: Int]
    /// Events that arrived while enumerating or resyncing, replayed on the snapshot, in order.
    public var buffered: EventBuffer
    /// The generation of the enumeration being waited for; older answers are ignored.
    public var enumerationGeneration: Int
    /// How many readings in a row the kernel kept changing while they were read (``Snapshot/changedWhileRead``);
    /// while it is above 0, a ``TimerID/reread`` is pending or the re-read it started is in flight.
    public var changedReadings: Int
    /// The enumeration in flight is such a re-read, not a resync after lost events.
    public var rereading: Bool
    /// A reload was asked for while one could not start (enumerating, or another reload in flight).
    public var reloadPending: Bool
    /// A `loadConfiguration` is in flight.
    public var reloadInFlight: Bool
    /// The hook queue.
    public var hooks: HookQueue
    /// The next hook run's id.
    public var nextHookRunID: Int
    /// Whether any hook is installed, as the daemon last said (``Event/hooksInstalled(_:)``): while none is, changes
    /// queue no hook run (a run would find nothing to start, and a burst would cost a step of the loop per change
    /// for it). `true` until told otherwise, so a session whose daemon never says runs the hooks of every change.
    public var hooksInstalled: Bool
    /// Subjects whose hooks wait for their state to hold, with the state before the first change.
    public var debouncing: TreeDictionary<HookSubject, OperationalState>
    /// Counters.
    public var counters: Counters
    /// The first enumeration has finished: the links and devices are the kernel's. Queries are answered only from
    /// such a model (before it, they would list nothing).
    public var isEnumerated: Bool
    /// `Reload` calls taken so far (``Event/reloadRequested(by:)``, in the order the control service sent them,
    /// which numbers its callers the same way; a SIGHUP is not counted): the number a call gets is this after it.
    public var reloadRequests: Int
    /// The requests the reload in flight answers: those made before it read the files.
    public var reloadCovers: Int
    /// How the last reload ended, and which requests it answered; `nil` before the first.
    public var lastReload: ReloadOutcome?
    /// Increases whenever something a client is told changes (links, devices, the phase, the configuration, the
    /// reported counters): clients see gaps in it, and the control plane keys its encoded replies on it.
    public var changeSequence: Int
    /// What changed from the model of `changeSequence - 1` to this one: the links and devices, by key.
    public var lastChange: StateChange
    /// The least urgent journal priority the daemon keeps: entries above it are not made at all (the one place the
    /// level applies), so a burst does not build thousands of debug texts that the daemon would only drop.
    public var maximumLogPriority: LogPriority
    /// What the networkd-dispatcher scripts were told, per link, and networkd's administrative states.
    public var dispatcher: DispatcherBook

    private var storedConfiguration: Configuration
    private var storedLinks: TreeDictionary<Int32, Link>
    private var storedDevices: TreeDictionary<String, Device>
    /// What ``onlineState`` follows from, always equal to a count over ``links`` under ``configuration``.
    private var online: OnlineTally

    /// A session about to start, with `configuration`, making journal entries up to `maximumLogPriority`.
    public init(configuration: Configuration = Configuration(), maximumLogPriority: LogPriority = .debug) {
        phase = .starting
        storedConfiguration = configuration
        storedLinks = [:]
        online = OnlineTally(links: [], configuration: configuration)
        storedDevices = [:]
        deviceCounts = [:]
        buffered = []
        enumerationGeneration = 0
        changedReadings = 0
        rereading = false
        reloadPending = false
        reloadInFlight = false
        hooks = HookQueue()
        nextHookRunID = 1
        hooksInstalled = true
        debouncing = [:]
        counters = Counters()
        changeSequence = 0
        lastChange = .everything
        isEnumerated = false
        reloadRequests = 0
        reloadCovers = 0
        lastReload = nil
        dispatcher = DispatcherBook()
        self.maximumLogPriority = maximumLogPriority
    }

    /// Replaces the link at `index`, or removes it when `link` is `nil`, adjusting the online tally: O(log n).
    public mutating func setLink(_ link: Link?, at index: Int32) {
        if let old = storedLinks[index] {
            online.count(old, under: storedConfiguration, as: -1)
        }
        storedLinks[index] = link
        if let link {
            online.count(link, under: storedConfiguration, as: 1)
        }
    }

    /// Replaces the device at `path`, or removes it when `device` is `nil`, adjusting ``deviceCounts``: O(log n).
    public mutating func setDevice(_ device: Device?, at path: String) {
        if let old = storedDevices[path] {
            deviceCounts[old.subsystem, default: 0] -= 1
            if deviceCounts[old.subsystem] == 0 { deviceCounts[old.subsystem] = nil }
        }
        storedDevices[path] = device
        if let device {
            deviceCounts[device.subsystem, default: 0] += 1
        }
    }

    private static func counts(of devices: TreeDictionary<String, Device>) -> [String: Int] {
        devices.values.reduce(into: [:]) { counts, device in counts[device.subsystem, default: 0] += 1 }
    }

    /// The host's online state under the configuration.
    public var onlineState: OnlineState {
        online.state(under: storedConfiguration)
    }

    /// What keeps the host from being online (``OnlineEvaluation/missing(of:configuration:)``), `nil` when online.
    /// Kept from the online tally: without `RequiredInterfaces=` and with more than
    /// ``NetdevWire/linksNamedPerLine`` links, its one line gives the number of links instead of each link's state;
    /// with them, each requirement's line names up to that many links short of its state, looked up by index
    /// (O(log n) each), and counts them above.
    public var onlineMissing: [String]? {
        guard onlineState != .online else { return nil }
        return online.missing(in: storedLinks, under: storedConfiguration)
    }

    /// How many links count for the online state (not loopback, not ignored): above
    /// ``NetdevWire/linksNamedPerLine`` links and without required interfaces, ``onlineMissing`` depends on this
    /// number, the online state and the configuration only.
    public var onlineCandidates: Int { online.candidates }

    /// Links sorted by index, for listings.
    public var sortedLinks: [Link] {
        storedLinks.values.sorted { $0.index < $1.index }
    }

    /// The link called `name`, if any.
    public func link(named name: String) -> Link? {
        storedLinks.values.first { $0.name == name }
    }

    private enum CodingKeys: String, CodingKey {
        case phase, configuration, links, devices, buffered, enumerationGeneration, reloadPending, reloadInFlight
        case hooks, nextHookRunID, debouncing, counters, changeSequence, lastChange, maximumLogPriority, isEnumerated
        case reloadRequests, reloadCovers, lastReload, dispatcher, changedReadings, rereading, hooksInstalled
    }

    /// Decodes a model; the online tally and the device counts are counted from the links and devices.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        phase = try container.decode(Phase.self, forKey: .phase)
        storedConfiguration = try container.decode(Configuration.self, forKey: .configuration)
        storedLinks = try container.decode(TreeDictionary<Int32, Link>.self, forKey: .links)
        online = OnlineTally(links: storedLinks.values, configuration: storedConfiguration)
        storedDevices = try container.decode(TreeDictionary<String, Device>.self, forKey: .devices)
        deviceCounts = Self.counts(of: storedDevices)
        buffered = try container.decode(EventBuffer.self, forKey: .buffered)
        enumerationGeneration = try container.decode(Int.self, forKey: .enumerationGeneration)
        reloadPending = try container.decode(Bool.self, forKey: .reloadPending)
        reloadInFlight = try container.decode(Bool.self, forKey: .reloadInFlight)
        hooks = try container.decode(HookQueue.self, forKey: .hooks)
        nextHookRunID = try container.decode(Int.self, forKey: .nextHookRunID)
        debouncing = try container.decode(TreeDictionary<HookSubject, OperationalState>.self, forKey: .debouncing)
        counters = try container.decode(Counters.self, forKey: .counters)
        changeSequence = try container.decode(Int.self, forKey: .changeSequence)
        lastChange = try container.decodeIfPresent(StateChange.self, forKey: .lastChange) ?? .everything
        maximumLogPriority = try container.decodeIfPresent(LogPriority.self, forKey: .maximumLogPriority) ?? .debug
        isEnumerated = try container.decodeIfPresent(Bool.self, forKey: .isEnumerated) ?? (phase != .enumerating)
        reloadRequests = try container.decodeIfPresent(Int.self, forKey: .reloadRequests) ?? 0
        reloadCovers = try container.decodeIfPresent(Int.self, forKey: .reloadCovers) ?? 0
        lastReload = try container.decodeIfPresent(ReloadOutcome.self, forKey: .lastReload)
        dispatcher = try container.decodeIfPresent(DispatcherBook.self, forKey: .dispatcher) ?? DispatcherBook()
        changedReadings = try container.decodeIfPresent(Int.self, forKey: .changedReadings) ?? 0
        rereading = try container.decodeIfPresent(Bool.self, forKey: .rereading) ?? false
        hooksInstalled = try container.decodeIfPresent(Bool.self, forKey: .hooksInstalled) ?? true
    }

    /// Encodes the model without its tallies (which follow from the links and devices).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(phase, forKey: .phase)
        try container.encode(storedConfiguration, forKey: .configuration)
        try container.encode(storedLinks, forKey: .links)
        try container.encode(devices, forKey: .devices)
        try container.encode(buffered, forKey: .buffered)
        try container.encode(enumerationGeneration, forKey: .enumerationGeneration)
        try container.encode(reloadPending, forKey: .reloadPending)
        try container.encode(reloadInFlight, forKey: .reloadInFlight)
        try container.encode(hooks, forKey: .hooks)
        try container.encode(nextHookRunID, forKey: .nextHookRunID)
        try container.encode(debouncing, forKey: .debouncing)
        try container.encode(counters, forKey: .counters)
        try container.encode(changeSequence, forKey: .changeSequence)
        try container.encode(lastChange, forKey: .lastChange)
        try container.encode(maximumLogPriority, forKey: .maximumLogPriority)
        try container.encode(isEnumerated, forKey: .isEnumerated)
        try container.encode(reloadRequests, forKey: .reloadRequests)
        try container.encode(reloadCovers, forKey: .reloadCovers)
        try container.encodeIfPresent(lastReload, forKey: .lastReload)
        try container.encode(dispatcher, forKey: .dispatcher)
        try container.encode(changedReadings, forKey: .changedReadings)
        try container.encode(rereading, forKey: .rereading)
        try container.encode(hooksInstalled, forKey: .hooksInstalled)
    }
}
