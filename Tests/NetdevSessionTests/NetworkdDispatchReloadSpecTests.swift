import MobiusCore
import MobiusTest
import Testing

@testable import NetdevSession

/// The networkd-dispatcher compatibility across waits that time out, resyncs and reloads, every step checked whole.
extension NetworkdDispatchSpecTests {
    @Test("a link networkd never writes of runs as unmanaged after the wait; a resync runs what networkd changed")
    func waitThenResync() {
        var (store, off, _) = Self.awaitingNetworkd()
        store.send(.timerFired(.networkdWait(index: 5)), effects: [Self.dispatched(3, "off", off, "unmanaged", "off")])
        {
            $0.dispatcher.awaitingNetworkd = [:]
            $0.dispatcher.told[5] = Self.told("unmanaged", "off")
            $0.dispatcher.nextRunID = 4
        }
        store.sendIgnored(.timerFired(.networkdWait(index: 5)))
        store.send(
            .monitorOverflowed(source: .netlink),
            effects: Fixture.lostEvents(.netlink, resyncs: 1, generation: 2)
        ) {
            $0.phase = .resyncing
            $0.counters.resyncs = 1
            $0.enumerationGeneration = 2
            $0.published()
        }
        // Nothing runs during the resync; networkd's new state is kept for its end.
        store.send(.networkdStateChanged(index: 5, administrative: "configured"), effects: []) {
            $0.dispatcher.administrative[5] = "configured"
        }
        store.send(
            .enumerated(generation: 2, snapshot: Snapshot(links: [Self.lo, off], devices: [])),
            effects: [
                Self.dispatched(4, "configured", off, "configured", "off"),
                Fixture.log(
                    .notice, .resynced, "Re-read the state after lost events: 2 links (0 routable), 0 devices; offline",
                    [LogField("NETDEVD_RESYNCS", "1")]),
                .notify([.status("2 links (0 routable), 0 devices; offline")]),
            ]
        ) {
            $0.phase = .running
            $0.dispatcher.told[5] = Self.told("configured", "off")
            $0.dispatcher.nextRunID = 5
            $0.publishedEverything()
        }
    }

    @Test("turned on by a reload, the links' states count as told and scripts run from the next change; off again")
    func onAndOffByReload() {
        let eth0 = Link(state: Fixture.state(2, "eth0"))
        var plain = Fixture.running([eth0], configuration: Self.plain)
        plain.maximumLogPriority = .notice
        var store = SessionStore(plain)
        store.send(
            .reloadRequested(by: "uid 0"),
            effects: [.notify([.reloading, .status("Reloading configuration (uid 0)…")]), .loadConfiguration]
        ) {
            $0.phase = .reloading
            $0.reloadRequests = 1
            $0.reloadCovers = 1
            $0.reloadInFlight = true
            $0.published()
        }
        let offline = "2 links (0 routable), 0 devices; offline"
        store.send(
            .configurationLoaded(Self.configuration, warnings: []),
            effects: [
                .watchNetworkdStates(true), Fixture.log(.notice, .reloaded, "Configuration reloaded: \(offline)"),
                .notify([.ready, .status(offline)]),
            ]
        ) {
            $0.configuration = Self.configuration
            $0.dispatcher.adoptPending = true
            $0.phase = .running
            $0.reloadInFlight = false
            $0.lastReload = ReloadOutcome(covers: 1, warnings: [], errors: [])
            $0.published()
        }
        // loopback has no state file of networkd's: pending, as networkctl says.
        store.send(.networkdStatesRead(running: true, administrative: [2: "configured"]), effects: []) {
            $0.dispatcher.adoptPending = false
            $0.dispatcher.networkdRunning = true
            $0.dispatcher.networkdStatesKnown = true
            $0.dispatcher.administrative = [2: "configured"]
            $0.dispatcher.told = [1: Self.told("pending", "carrier"), 2: Self.told("configured", "carrier")]
        }
        store.send(
            .networkdStateChanged(index: 2, administrative: "configuring"),
            effects: [Self.dispatched(1, "configuring", eth0, "configuring", "carrier")]
        ) {
            $0.dispatcher.administrative[2] = "configuring"
            $0.dispatcher.told[2] = Self.told("configuring", "carrier")
            $0.dispatcher.nextRunID = 2
        }
        let routable = Link(state: eth0.state, addresses: [Fixture.v4])
        let state = Fixture.linkRun(1, .linkState, routable, from: .carrier, online: .online)
        let online = Fixture.onlineRun(2, .online, from: .offline)
        store.send(
            .addressAdded(index: 2, Fixture.v4),
            effects: [
                Self.dispatched(2, "routable", routable, "configuring", "routable"), .runHooks(state),
                Fixture.log(
                    .notice, .onlineStateChanged, "Online state is now online (was offline)",
                    [LogField("NETDEVD_ONLINE_STATE", "online"), LogField("NETDEVD_PREV_ONLINE_STATE", "offline")]),
                .runHooks(online), .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = routable
            $0.startNew(state)
            $0.startNew(online)
            $0.dispatcher.told[2] = Self.told("configuring", "routable")
            $0.dispatcher.nextRunID = 3
            $0.published(links: [2])
        }
        store.send(
            .reloadRequested(by: "uid 0"),
            effects: [.notify([.reloading, .status("Reloading configuration (uid 0)…")]), .loadConfiguration]
        ) {
            $0.phase = .reloading
            $0.reloadRequests = 2
            $0.reloadCovers = 2
            $0.reloadInFlight = true
            $0.published()
        }
        // Off again: what the links were told is forgotten.
        let status = "2 links (1 routable), 0 devices; online"
        store.send(
            .configurationLoaded(Self.plain, warnings: []),
            effects: [
                .watchNetworkdStates(false), Fixture.log(.notice, .reloaded, "Configuration reloaded: \(status)"),
                .notify([.ready, .status(status)]),
            ]
        ) {
            $0.configuration = Self.plain
            $0.dispatcher = DispatcherBook()
            $0.phase = .running
            $0.reloadInFlight = false
            $0.lastReload = ReloadOutcome(covers: 2, warnings: [], errors: [])
            $0.published()
        }
    }
}
