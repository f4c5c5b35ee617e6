import MobiusCore
import MobiusTest
import Testing

@testable import NetdevSession

/// The networkd-dispatcher compatibility, every step checked whole. The journal keeps notices and above here, so
/// the effects are the scripts' runs, the hook runs and what the metrics count.
@Suite("networkd-dispatcher, step by step")
struct NetworkdDispatchSpecTests {
    static let directories = ["/etc/networkd-dispatcher", "/usr/lib/networkd-dispatcher"]
    static let plain = Configuration(ignoredInterfaces: ["ignored*"])
    static var configuration: Configuration {
        var configuration = plain
        configuration.networkdDispatcherDirectories = directories
        return configuration
    }
    static let lo = Fixture.loopback

    static func dispatched(
        _ id: Int, _ state: String, _ link: Link, _ administrative: String, _ operational: String, gone: Bool = false
    ) -> Effect {
        .dispatch(
            DispatcherRun(
                id: id, state: state, link: link, administrativeState: administrative, operationalState: operational,
                linkIsGone: gone, directories: directories))
    }

    static func told(_ administrative: String, _ operational: String) -> DispatcherBook.Told {
        DispatcherBook.Told(administrative: administrative, operational: operational)
    }

    /// A session starting with the compatibility on, journal at notice, as `initiate` leaves it.
    static var enumerating: Model {
        var model = Model(configuration: configuration, maximumLogPriority: .notice)
        model.phase = .enumerating
        model.enumerationGeneration = 1
        model.changeSequence = 1
        return model
    }

    /// A running session with the compatibility on and networkd's states read (networkd not running): loopback
    /// ran its start (runs 1 and 2).
    /// Started with networkd running, then veth1 (index 5) added down: its hooks run (run 1) and it waits for
    /// networkd's state file. The store, the link and its hook run.
    static func awaitingNetworkd() -> (store: SessionStore, off: Link, added: HookRun) {
        var store = Self.started()
        store.send(.networkdStatesRead(running: true, administrative: [1: "unmanaged"]), effects: []) {
            $0.dispatcher.networkdRunning = true
            $0.dispatcher.administrative = [1: "unmanaged"]
        }
        let off = Link(state: Fixture.state(5, "veth1", up: false))
        let added = Fixture.linkRun(1, .linkAdded, off, online: .offline)
        store.send(
            .linkChanged(off.state),
            effects: [
                .runHooks(added), .startTimer(.networkdWait(index: 5), milliseconds: 5_000),
                .noteActivity([.linkAdded(index: 5)]),
            ]
        ) {
            $0.links[5] = off
            $0.startNew(added)
            $0.dispatcher.awaitingNetworkd = [5: ["off"]]
            $0.published(links: [5])
        }
        return (store, off, added)
    }

    static func started() -> SessionStore {
        var model = Fixture.running(configuration: configuration)
        model.maximumLogPriority = .notice
        var store = SessionStore(model)
        store.send(
            .networkdStatesRead(running: false, administrative: [:]),
            effects: [
                dispatched(1, "unmanaged", lo, "unmanaged", "carrier"),
                dispatched(2, "carrier", lo, "unmanaged", "carrier"),
            ]
        ) {
            $0.dispatcher.networkdStatesKnown = true
            $0.dispatcher.startPending = false
            $0.dispatcher.told = [1: told("unmanaged", "carrier")]
            $0.dispatcher.nextRunID = 3
        }
        return store
    }

    @Test("at start each link not ignored runs its administrative, then its operational state, once states are known")
    func start() {
        InitSpec(Session.initiate).when(Model(configuration: Self.configuration, maximumLogPriority: .notice))
            .then(
                assertThatFirst(
                    hasModel(Self.enumerating),
                    hasExactlyEffects([
                        .watchNetworkdStates(true), .notify([.status("Enumerating links and devices…")]),
                        .enumerate(generation: 1, subsystems: Fixture.tracked),
                    ])))
        let eth0 = Fixture.routable(2, "eth0")
        let ignored = Fixture.routable(3, "ignored0")
        var store = SessionStore(Self.enumerating)
        store.send(
            .enumerated(generation: 1, snapshot: Snapshot(links: [Self.lo, eth0, ignored], devices: [])),
            effects: [
                Fixture.log(
                    .notice, .started, "netdevd started: 3 links (2 routable), 0 devices; online",
                    [LogField("NETDEVD_ONLINE_STATE", "online")]),
                .notify([.ready, .status("3 links (2 routable), 0 devices; online")]),
                .noteActivity([.linkAdded(index: 1), .linkAdded(index: 2), .linkAdded(index: 3)]),
            ]
        ) {
            $0.phase = .running
            $0.isEnumerated = true
            $0.links = [1: Self.lo, 2: eth0, 3: ignored]
            $0.dispatcher.startPending = true
            $0.publishedEverything()
        }
        store.send(
            .networkdStatesRead(running: false, administrative: [:]),
            effects: [
                Self.dispatched(1, "unmanaged", Self.lo, "unmanaged", "carrier"),
                Self.dispatched(2, "carrier", Self.lo, "unmanaged", "carrier"),
                Self.dispatched(3, "unmanaged", eth0, "unmanaged", "routable"),
                Self.dispatched(4, "routable", eth0, "unmanaged", "routable"),
            ]
        ) {
            $0.dispatcher.networkdStatesKnown = true
            $0.dispatcher.startPending = false
            $0.dispatcher.told = [1: Self.told("unmanaged", "carrier"), 2: Self.told("unmanaged", "routable")]
            $0.dispatcher.nextRunID = 5
        }
        store.sendIgnored(.networkdStatesRead(running: false, administrative: [:]))
    }

    @Test("networkd's states read before the snapshot: the start runs with networkd's administrative states")
    func startWithNetworkd() {
        let eth0 = Fixture.routable(2, "eth0")
        var store = SessionStore(Self.enumerating)
        store.send(.networkdStatesRead(running: true, administrative: [1: "unmanaged", 2: "configured"]), effects: []) {
            $0.dispatcher.networkdRunning = true
            $0.dispatcher.networkdStatesKnown = true
            $0.dispatcher.administrative = [1: "unmanaged", 2: "configured"]
        }
        store.send(
            .enumerated(generation: 1, snapshot: Snapshot(links: [Self.lo, eth0], devices: [])),
            effects: [
                Fixture.log(
                    .notice, .started, "netdevd started: 2 links (1 routable), 0 devices; online",
                    [LogField("NETDEVD_ONLINE_STATE", "online")]),
                .notify([.ready, .status("2 links (1 routable), 0 devices; online")]),
                Self.dispatched(1, "unmanaged", Self.lo, "unmanaged", "carrier"),
                Self.dispatched(2, "carrier", Self.lo, "unmanaged", "carrier"),
                Self.dispatched(3, "configured", eth0, "configured", "routable"),
                Self.dispatched(4, "routable", eth0, "configured", "routable"),
                .noteActivity([.linkAdded(index: 1), .linkAdded(index: 2)]),
            ]
        ) {
            $0.phase = .running
            $0.isEnumerated = true
            $0.links = [1: Self.lo, 2: eth0]
            $0.dispatcher.told = [1: Self.told("unmanaged", "carrier"), 2: Self.told("configured", "routable")]
            $0.dispatcher.nextRunID = 5
            $0.publishedEverything()
        }
    }

    @Test("without networkd a link runs each operational state it enters, once, and lingers when removed")
    func lifeWithoutNetworkd() {
        var store = Self.started()
        let off = Link(state: Fixture.state(4, "veth0", up: false))
        let added = Fixture.linkRun(1, .linkAdded, off, online: .offline)
        store.send(
            .linkChanged(off.state),
            effects: [
                .runHooks(added), Self.dispatched(3, "off", off, "unmanaged", "off"),
                .noteActivity([.linkAdded(index: 4)]),
            ]
        ) {
            $0.links[4] = off
            $0.startNew(added)
            $0.dispatcher.told[4] = Self.told("unmanaged", "off")
            $0.dispatcher.nextRunID = 4
            $0.published(links: [4])
        }
        store.send(Fixture.succeeded(added), effects: []) { $0.hooks.running = [:] }
        // An address on a link that is down: no new operational state, nothing runs.
        let offWithAddress = Link(state: off.state, addresses: [Fixture.v6LinkLocal])
        store.send(.addressAdded(index: 4, Fixture.v6LinkLocal), effects: []) {
            $0.links[4] = offWithAddress
            $0.published(links: [4])
        }
        let degraded = Link(state: Fixture.state(4, "veth0"), addresses: [Fixture.v6LinkLocal])
        let state = Fixture.linkRun(2, .linkState, degraded, from: .off, online: .offline)
        store.send(
            .linkChanged(degraded.state),
            effects: [
                Self.dispatched(4, "degraded", degraded, "unmanaged", "degraded"), .runHooks(state),
                .noteActivity([.linkStateChanged(index: 4)]),
            ]
        ) {
            $0.links[4] = degraded
            $0.startNew(state)
            $0.dispatcher.told[4] = Self.told("unmanaged", "degraded")
            $0.dispatcher.nextRunID = 5
            $0.published(links: [4])
        }
        store.sendWithoutModel(.linkChanged(degraded.state))
        let removed = Fixture.linkRun(3, .linkRemoved, degraded, from: .degraded, online: .offline)
        store.send(
            .linkRemoved(index: 4),
            effects: [
                Self.dispatched(5, "linger", degraded, "linger", "degraded", gone: true),
                .noteActivity([.linkRemoved(index: 4)]),
            ]
        ) {
            $0.links[4] = nil
            $0.queueNew(removed)
            $0.dispatcher.told[4] = nil
            $0.dispatcher.nextRunID = 6
            $0.published(links: [4])
        }
    }

    @Test("while networkd runs a new link waits for its state file, then runs the administrative states it passed")
    func lifeWithNetworkd() {
        var (store, off, _) = Self.awaitingNetworkd()
        store.send(
            .networkdStateChanged(index: 5, administrative: "unmanaged"),
            effects: [
                .cancelTimer(.networkdWait(index: 5)),
                Self.dispatched(3, "off", off, "unmanaged", "off"),
                Self.dispatched(4, "initialized", off, "initialized", "off"),
                Self.dispatched(5, "unmanaged", off, "unmanaged", "off"),
            ]
        ) {
            $0.dispatcher.administrative[5] = "unmanaged"
            $0.dispatcher.awaitingNetworkd = [:]
            $0.dispatcher.told[5] = Self.told("unmanaged", "off")
            $0.dispatcher.nextRunID = 6
        }
        // networkd wrote the file again for another of its changes: no run, and no new model for the observers.
        store.sendWithoutModel(.networkdStateChanged(index: 5, administrative: "unmanaged"))
        store.send(
            .networkdStateChanged(index: 5, administrative: "configured"),
            effects: [Self.dispatched(6, "configured", off, "configured", "off")]
        ) {
            $0.dispatcher.administrative[5] = "configured"
            $0.dispatcher.told[5] = Self.told("configured", "off")
            $0.dispatcher.nextRunID = 7
        }
        store.send(.networkdStateChanged(index: 5, administrative: nil), effects: []) {
            $0.dispatcher.administrative[5] = nil
        }
        let removed = Fixture.linkRun(2, .linkRemoved, off, from: .off, online: .offline)
        store.send(
            .linkRemoved(index: 5),
            effects: [
                Self.dispatched(7, "linger", off, "linger", "off", gone: true), .noteActivity([.linkRemoved(index: 5)]),
            ]
        ) {
            $0.links[5] = nil
            $0.queueNew(removed)
            $0.dispatcher.told[5] = nil
            $0.dispatcher.nextRunID = 8
            $0.published(links: [5])
        }
        // A link networkd never wrote of runs nothing, not even linger; its wait ends with it.
        let other = Link(state: Fixture.state(6, "veth2", up: false))
        let otherAdded = Fixture.linkRun(3, .linkAdded, other, online: .offline)
        store.send(
            .linkChanged(other.state),
            effects: [
                .runHooks(otherAdded), .startTimer(.networkdWait(index: 6), milliseconds: 5_000),
                .noteActivity([.linkAdded(index: 6)]),
            ]
        ) {
            $0.links[6] = other
            // The removal of veth1, held until its link-added run ends, does not hold back the search for waiting
            // runs, which starts after this one.
            $0.startNew(otherAdded)
            $0.dispatcher.awaitingNetworkd = [6: ["off"]]
            $0.published(links: [6])
        }
        let otherRemoved = Fixture.linkRun(4, .linkRemoved, other, from: .off, online: .offline)
        store.send(
            .linkRemoved(index: 6),
            effects: [.cancelTimer(.networkdWait(index: 6)), .noteActivity([.linkRemoved(index: 6)])]
        ) {
            $0.links[6] = nil
            $0.queueNew(otherRemoved)
            $0.dispatcher.awaitingNetworkd = [:]
            $0.published(links: [6])
        }
    }
}
