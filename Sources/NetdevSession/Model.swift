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

/// Counts an operator asks about: how busy, how many resyncs, how many stale hook runs dropped.
public struct Counters: Codable, Sendable, Equatable {
    /// Events processed.
    public var events = 0
    /// Re-enumerations after lost events.
    public var resyncs = 0
    /// Queued hook runs dropped because newer state of the same subject replaced them.
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
public struct Model: Codable, Sendable, Equatable {
    /// Where the session is in its life.
    public var phase: Phase
    /// The configuration in force.
    public var configuration: Configuration
    /// Links by interface index.
    public var links: [Int32: Link]
    /// Devices of the tracked subsystems by sysfs path.
    public var devices: [String: Device]
    /// Events that arrived while enumerating or resyncing, replayed on the snapshot, in order.
    public var buffered: [Event]
    /// The generation of the enumeration being waited for; older answers are ignored.
    public var enumerationGeneration: Int
    /// A reload was asked for while one could not start (enumerating, or another reload in flight).
    public var reloadPending: Bool
    /// A `loadConfiguration` is in flight.
    public var reloadInFlight: Bool
    /// The hook queue.
    public var hooks: HookQueue
    /// The next hook run's id.
    public var nextHookRunID: Int
    /// Subjects whose hooks wait for their state to hold, with the state before the first change.
    public var debouncing: [HookSubject: OperationalState]
    /// Counters.
    public var counters: Counters
    /// Increases whenever links, devices, the phase or the configuration change: clients see gaps in it.
    public var changeSequence: Int

    /// A session about to start, with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        phase = .starting
        self.configuration = configuration
        links = [:]
        devices = [:]
        buffered = []
        enumerationGeneration = 0
        reloadPending = false
        reloadInFlight = false
        hooks = HookQueue()
        nextHookRunID = 1
        debouncing = [:]
        counters = Counters()
        changeSequence = 0
    }

    /// The host's online state under the configuration.
    public var onlineState: OnlineState {
        OnlineEvaluation.state(of: links.values, configuration: configuration)
    }

    /// Links sorted by index, for listings.
    public var sortedLinks: [Link] {
        links.values.sorted { $0.index < $1.index }
    }

    /// The link called `name`, if any.
    public func link(named name: String) -> Link? {
        links.values.first { $0.name == name }
    }
}

/// How the online state follows from the links and the configuration.
public enum OnlineEvaluation {
    /// `online`, `partial` or `offline` for `links` under `configuration`.
    public static func state(of links: some Collection<Link>, configuration: Configuration) -> OnlineState {
        let candidates = links.lazy.filter { !$0.state.isLoopback && !configuration.ignores($0.name) }
        if configuration.requiredInterfaces.isEmpty {
            return candidates.contains { satisfies($0, configuration.minimumOperationalState, configuration) }
                ? .online : .offline
        }
        var met = 0
        for requirement in configuration.requiredInterfaces {
            let minimum = requirement.minimumState ?? configuration.minimumOperationalState
            let matching = candidates.filter { Glob.matches(requirement.pattern, $0.name) }
            if matching.contains(where: { _ in true }) && matching.allSatisfy({ satisfies($0, minimum, configuration) })
            {
                met += 1
            }
        }
        if met == configuration.requiredInterfaces.count { return .online }
        return met > 0 ? .partial : .offline
    }

    /// `true` when `link` reaches `minimum`, with the required address families for `routable`.
    public static func satisfies(_ link: Link, _ minimum: OperationalState, _ configuration: Configuration) -> Bool {
        guard link.operationalState >= minimum else { return false }
        guard minimum == .routable else { return true }
        switch configuration.requiredFamily {
        case .any: return true
        case .ipv4: return link.hasRoutableAddress(.ipv4)
        case .ipv6: return link.hasRoutableAddress(.ipv6)
        case .both: return link.hasRoutableAddress(.ipv4) && link.hasRoutableAddress(.ipv6)
        }
    }
}
