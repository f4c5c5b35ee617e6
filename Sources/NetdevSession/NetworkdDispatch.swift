public import HashTreeCollections

/// One state directory of networkd-dispatcher scripts to run for a link: `<state>.d` under each configured
/// directory, the scripts called as networkd-dispatcher 2.2 calls them (no arguments; `IFACE`, `STATE`,
/// `AdministrativeState`, `OperationalState`, addresses and `json` in the environment).
///
/// A link's runs are made in the order its states were entered and run in that order; none is merged or dropped,
/// as networkd-dispatcher runs every state it is told about.
public struct DispatcherRun: Codable, Sendable, Equatable {
    /// Unique within a session, increasing.
    public var id: Int
    /// The state entered, which names the directory (`routable` runs `routable.d`).
    public var state: String
    /// The link as it was when it entered the state.
    public var link: Link
    /// The administrative state then (networkd's, or `unmanaged` without it; `linger` once removed).
    public var administrativeState: String
    /// The operational state then, in networkd's words.
    public var operationalState: String
    /// The link is gone (`linger`): its scripts are told no addresses, as networkctl has none to say.
    public var linkIsGone: Bool
    /// The script directories (`NetworkdDispatcherDirectory=`), highest priority first.
    public var directories: [String]
    /// How long each script may run, in milliseconds (0: no limit); `[Hooks] TimeoutSec=`.
    public var timeoutMilliseconds: Int
    /// How many links may run scripts at once; `[Hooks] Parallelism=`.
    public var parallelism: Int

    /// A run.
    public init(
        id: Int, state: String, link: Link, administrativeState: String, operationalState: String,
        linkIsGone: Bool = false, directories: [String], timeoutMilliseconds: Int = 30_000, parallelism: Int = 4
    ) {
        self.id = id
        self.state = state
        self.link = link
        self.administrativeState = administrativeState
        self.operationalState = operationalState
        self.linkIsGone = linkIsGone
        self.directories = directories
        self.timeoutMilliseconds = timeoutMilliseconds
        self.parallelism = parallelism
    }
}

/// What the networkd-dispatcher compatibility keeps: the states each link's scripts were last run for (a state is
/// run when it differs from them, as networkd-dispatcher compares with what it last saw), and systemd-networkd's
/// administrative state of each link, from its state files.
public struct DispatcherBook: Codable, Sendable, Equatable {
    /// The states a link's scripts were last told.
    public struct Told: Codable, Sendable, Equatable {
        /// The administrative state.
        public var administrative: String
        /// The operational state.
        public var operational: String
    }

    /// systemd-networkd's state directory exists: administrative states are its own.
    public var networkdRunning = false
    /// networkd's administrative state of each link, by index. (Like the other tables kept per link, a persistent
    /// tree: the loop's observers hold the previous model, and a plain dictionary would be copied whole by each
    /// event that changes one link.)
    public var administrative: TreeDictionary<Int32, String> = [:]
    /// What each link's scripts were told, by index.
    public var told: TreeDictionary<Int32, Told> = [:]
    /// Links that appeared while networkd runs, waiting for networkd to write their state file before their first
    /// run (networkd-dispatcher hears of a link from networkd only), with the operational states they entered
    /// meanwhile, in order: each runs when the wait ends.
    public var awaitingNetworkd: TreeDictionary<Int32, [String]> = [:]
    /// The first ``Event/networkdStatesRead(running:administrative:)`` arrived: the administrative states are
    /// known.
    public var networkdStatesKnown = false
    /// The start's runs wait for the administrative states.
    public var startPending = false
    /// Turned on by a reload: the first states read are taken as told, without running.
    public var adoptPending = false
    /// The next run's id.
    public var nextRunID = 1

    /// An empty book.
    public init() {}
}

/// The networkd-dispatcher compatibility's rules, as networkd-dispatcher 2.2 (Debian's, started with
/// `--run-startup-triggers`) follows systemd-networkd's signals:
/// - at start, every link runs its administrative state's directory, then its operational state's;
/// - a link that appears runs its operational state's directory (networkd's first signal for a link carries it);
///   while networkd runs, once networkd has written the link's state file (networkd-dispatcher hears of a link from
///   networkd only, and its first run has networkd's administrative state), followed by each administrative state
///   networkd went through from `pending` (``passedThrough(from:to:)``);
/// - a change of either state runs the new state's directory (an administrative change each state networkd went
///   through);
/// - a link removed runs `linger.d` (networkd's state for a link that is gone).
/// Ignored links run nothing. The administrative state is networkd's (read from its state files) while networkd's
/// state directory exists (`pending` until networkd wrote the link's file), and `unmanaged` without it, as
/// networkctl says.
extension Transition {
    private var dispatching: Bool {
        !model.configuration.networkdDispatcherDirectories.isEmpty
            && (model.phase == .running || model.phase == .reloading)
    }

    private func administrativeState(of index: Int32) -> String {
        model.dispatcher.networkdRunning ? model.dispatcher.administrative[index] ?? "pending" : "unmanaged"
    }

    /// The first enumeration finished: every link runs its administrative, then its operational state (once
    /// networkd's states are known).
    mutating func dispatchAtStart() {
        guard dispatching else { return }
        guard model.dispatcher.networkdStatesKnown else {
            model.dispatcher.startPending = true
            return
        }
        for link in model.sortedLinks where !model.configuration.ignores(link.name) {
            let told = DispatcherBook.Told(
                administrative: administrativeState(of: link.index), operational: link.operationalState.rawValue)
            dispatch(told.administrative, link, told)
            dispatch(told.operational, link, told)
            model.dispatcher.told[link.index] = told
        }
    }

    /// A link appeared: its operational state runs, once networkd (while it runs) has written the link's file; the
    /// states it enters while it waits are kept, and run then, in order.
    mutating func dispatchAdded(_ link: Link) {
        guard dispatching, !model.configuration.ignores(link.name) else { return }
        let state = link.operationalState.rawValue
        if model.dispatcher.networkdRunning && model.dispatcher.administrative[link.index] == nil {
            if var entered = model.dispatcher.awaitingNetworkd[link.index] {
                // A link that flaps while it waits keeps its first states and its last (at most 64 in all).
                if entered.last != state { entered.append(state) }
                if entered.count > 64 { entered.remove(at: 32) }
                model.dispatcher.awaitingNetworkd[link.index] = entered
            } else {
                model.dispatcher.awaitingNetworkd[link.index] = [state]
                effects.append(.startTimer(.networkdWait(index: link.index), milliseconds: Self.networkdWait))
            }
            return
        }
        let entered = model.dispatcher.awaitingNetworkd.removeValue(forKey: link.index)
        if entered != nil { effects.append(.cancelTimer(.networkdWait(index: link.index))) }
        var states = entered ?? []
        if states.last != state { states.append(state) }
        var told = DispatcherBook.Told(administrative: administrativeState(of: link.index), operational: states[0])
        dispatch(told.operational, link, told)
        // networkd-dispatcher hears of a link from networkd's first signal, by when networkd has usually settled its
        // administrative state; the signals of the states it went through from pending follow, and each runs.
        if model.dispatcher.networkdRunning {
            for administrative in Self.passedThrough(from: "pending", to: told.administrative) {
                told.administrative = administrative
                dispatch(administrative, link, told)
            }
        }
        for operational in states.dropFirst() {
            told.operational = operational
            dispatch(operational, link, told)
        }
        model.dispatcher.told[link.index] = told
    }

    /// The administrative states networkd goes through from `old` to `new`, `new` last: its state machine runs
    /// pending, initialized, configuring, configured, and reaches unmanaged or failed from initialized; a state it
    /// passed between two writes of its state file is filled in.
    static func passedThrough(from old: String, to new: String) -> [String] {
        let order = ["pending", "initialized", "configuring", "configured"]
        guard old != new, let from = order.firstIndex(of: old) else { return old == new ? [] : [new] }
        if let to = order.firstIndex(of: new) {
            return to > from ? Array(order[(from + 1)...to]) : [new]
        }
        return from == 0 && (new == "unmanaged" || new == "failed") ? ["initialized", new] : [new]
    }

    /// A link's operational state changed: the new one runs unless its scripts were told it last.
    mutating func dispatchOperationalChange(_ link: Link) {
        guard dispatching, !model.configuration.ignores(link.name) else { return }
        guard var told = model.dispatcher.told[link.index] else { return dispatchAdded(link) }
        let state = link.operationalState.rawValue
        guard told.operational != state else { return }
        told.operational = state
        dispatch(state, link, told)
        model.dispatcher.told[link.index] = told
    }

    /// A link went away: `linger` runs, and the link is forgotten.
    mutating func dispatchRemoved(_ link: Link) {
        let told = model.dispatcher.told.removeValue(forKey: link.index)
        // One networkd never wrote of ran nothing, and nothing ends.
        guard model.dispatcher.awaitingNetworkd.removeValue(forKey: link.index) == nil else {
            effects.append(.cancelTimer(.networkdWait(index: link.index)))
            return
        }
        guard dispatching, !model.configuration.ignores(link.name) else { return }
        let removed = DispatcherBook.Told(
            administrative: "linger", operational: told?.operational ?? link.operationalState.rawValue)
        dispatch("linger", link, removed)
    }

    /// networkd's state files, all read (at start, and when its state directory appears or goes).
    mutating func networkdStatesRead(running: Bool, administrative: [Int32: String]) {
        model.dispatcher.networkdRunning = running
        model.dispatcher.networkdStatesKnown = true
        if model.dispatcher.adoptPending {
            model.dispatcher.adoptPending = false
            model.dispatcher.administrative = TreeDictionary(administrative)
            for link in model.links.values where !model.configuration.ignores(link.name) {
                model.dispatcher.told[link.index] = DispatcherBook.Told(
                    administrative: administrativeState(of: link.index), operational: link.operationalState.rawValue)
            }
            return
        }
        let indexes = Set(model.dispatcher.administrative.keys).union(administrative.keys)
        model.dispatcher.administrative = [:]
        for index in indexes.sorted() {
            networkdStateChanged(index: index, administrative: administrative[index])
        }
        // Without networkd, a link waits for nothing.
        for index in model.dispatcher.awaitingNetworkd.keys.sorted() where !running {
            if let link = model.links[index] { dispatchAdded(link) }
        }
        if model.dispatcher.startPending {
            model.dispatcher.startPending = false
            dispatchAtStart()
        }
    }

    /// networkd wrote a link's state file (or removed it): a new administrative state runs.
    mutating func networkdStateChanged(index: Int32, administrative: String?) {
        // networkd writes a link's file on each of its changes, most of them not of the administrative state: one
        // that is already known and told changes nothing, and publishes no model.
        if model.dispatcher.administrative[index] == administrative, model.dispatcher.awaitingNetworkd[index] == nil,
            administrative == nil || (model.dispatcher.told[index].map { $0.administrative == administrative } ?? true)
        {
            unchanged = true
            return
        }
        model.dispatcher.administrative[index] = administrative
        if administrative != nil, model.dispatcher.awaitingNetworkd[index] != nil, let link = model.links[index] {
            return dispatchAdded(link)
        }
        guard let administrative, let link = model.links[index], var told = model.dispatcher.told[index],
            told.administrative != administrative, dispatching, !model.configuration.ignores(link.name)
        else { return }
        for state in Self.passedThrough(from: told.administrative, to: administrative) {
            told.administrative = state
            dispatch(state, link, told)
        }
        model.dispatcher.told[index] = told
    }

    /// How long a new link waits for networkd's state file, in milliseconds.
    static let networkdWait = 5_000

    /// networkd did not write a new link's file in time: its operational state runs, told `unmanaged`.
    mutating func networkdWaitExpired(_ index: Int32) {
        guard var states = model.dispatcher.awaitingNetworkd.removeValue(forKey: index), let link = model.links[index],
            dispatching, !model.configuration.ignores(link.name)
        else { return }
        if states.last != link.operationalState.rawValue { states.append(link.operationalState.rawValue) }
        var told = DispatcherBook.Told(administrative: "unmanaged", operational: states[0])
        for state in states {
            told.operational = state
            dispatch(state, link, told)
        }
        model.dispatcher.told[index] = told
    }

    /// A resync ended: administrative states that changed meanwhile run, and links that waited for networkd's file
    /// and have it now run (links added or changed are run by the resync's own announcements).
    mutating func dispatchAfterResync() {
        guard dispatching else { return }
        for index in model.dispatcher.awaitingNetworkd.keys.sorted() where model.dispatcher.administrative[index] != nil
        {
            if let link = model.links[index] { dispatchAdded(link) }
        }
        guard model.dispatcher.networkdRunning else { return }
        for (index, told) in model.dispatcher.told.sorted(by: { $0.key < $1.key }) {
            if let administrative = model.dispatcher.administrative[index], administrative != told.administrative {
                networkdStateChanged(index: index, administrative: administrative)
            }
        }
    }

    private mutating func dispatch(_ state: String, _ link: Link, _ told: DispatcherBook.Told) {
        let id = model.dispatcher.nextRunID
        model.dispatcher.nextRunID += 1
        effects.append(
            .dispatch(
                DispatcherRun(
                    id: id, state: state, link: link, administrativeState: told.administrative,
                    operationalState: told.operational, linkIsGone: state == "linger",
                    directories: model.configuration.networkdDispatcherDirectories,
                    timeoutMilliseconds: model.configuration.hookTimeoutMilliseconds,
                    parallelism: model.configuration.hookParallelism)))
    }
}
