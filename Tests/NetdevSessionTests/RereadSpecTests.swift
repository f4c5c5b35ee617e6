import MobiusCore
import MobiusTest
import NetdevSession
import Testing

/// A snapshot the kernel kept changing while it was read (every dump of a request interrupted, as while it configures
/// thousands of addresses) is used, not failed, and read again later until a reading is consistent.
@Suite("Reading again after the kernel changed what was read")
struct RereadSpecTests {
    static let lo = Fixture.loopback
    static let eth0 = Fixture.routable(2, "eth0")
    static let changing = ["RTM_GETADDR"]

    static func keptLastReading(again seconds: Int) -> [Effect] {
        [
            Fixture.log(
                .notice, .changedWhileRead,
                "The kernel kept changing RTM_GETADDR while it was read; kept the last reading and the changes since, "
                    + "reading again in \(seconds) s"),
            .startTimer(.reread, milliseconds: seconds * 1_000),
        ]
    }

    @Test("a start on a changing reading is ready at once, then reads again after 1 s, 2 s, ... until consistent")
    func startReadsAgainUntilConsistent() {
        let eth1 = Link(state: Fixture.state(3, "eth1"))
        var store = SessionStore(Session.initiate(Model()).model)
        // The dump lost eth0's address (it did not change, the dump skipped it); eth1 changed and its event came.
        store.send(.linkChanged(eth1.state), effects: []) { $0.buffered = [.linkChanged(eth1.state)] }
        let unaddressed = Link(state: Self.eth0.state)
        store.send(
            .enumerated(
                generation: 1,
                snapshot: Snapshot(links: [Self.lo, unaddressed], devices: [], changedWhileRead: Self.changing)),
            effects: [
                Fixture.log(.info, .linkAdded, "lo: carrier (127.0.0.1/8)", Fixture.fields(Self.lo)),
                Fixture.log(.info, .linkAdded, "eth0: carrier", Fixture.fields(unaddressed)),
                Fixture.log(.info, .linkAdded, "eth1: carrier", Fixture.fields(eth1)),
                Fixture.log(
                    .notice, .started, "netdevd started: 3 links (0 routable), 0 devices; offline",
                    [LogField("NETDEVD_ONLINE_STATE", "offline")]),
                .notify([.ready, .status("3 links (0 routable), 0 devices; offline")]),
            ] + Self.keptLastReading(again: 1) + [
                .noteActivity([.linkAdded(index: 1), .linkAdded(index: 2), .linkAdded(index: 3)])
            ]
        ) {
            $0.phase = .running
            $0.isEnumerated = true
            $0.buffered = []
            $0.links = [1: Self.lo, 2: unaddressed, 3: eth1]
            $0.changedReadings = 1
            $0.publishedEverything()
        }
        store.send(.timerFired(.reread), effects: [.enumerate(generation: 2, subsystems: Fixture.tracked)]) {
            $0.phase = .resyncing
            $0.rereading = true
            $0.enumerationGeneration = 2
            $0.published()
        }
        // Still changing: the address is found (a real change to hooks and clients), and the next reading waits
        // twice as long. Not a resync.
        let up = Fixture.linkRun(1, .linkState, Self.eth0, from: .carrier, online: .online)
        let online = Fixture.onlineRun(2, .online, from: .offline)
        store.send(
            .enumerated(
                generation: 2,
                snapshot: Snapshot(links: [Self.lo, Self.eth0, eth1], devices: [], changedWhileRead: Self.changing)),
            effects: [
                Fixture.log(
                    .info, .addressAdded, "eth0: address 192.0.2.10/24 added",
                    Fixture.fields(Self.eth0) + [LogField("NETDEVD_ADDRESS", "192.0.2.10/24")]),
                Fixture.log(
                    .info, .linkStateChanged, "eth0: carrier → routable",
                    Fixture.fields(Self.eth0) + [LogField("NETDEVD_PREV_OPER_STATE", "carrier")]),
                .runHooks(up),
                Fixture.log(
                    .notice, .onlineStateChanged, "Online state is now online (was offline)",
                    [LogField("NETDEVD_ONLINE_STATE", "online"), LogField("NETDEVD_PREV_ONLINE_STATE", "offline")]),
                .runHooks(online),
                Fixture.log(.notice, .reread, "Read links and devices again: 3 links (1 routable), 0 devices; online"),
                .notify([.status("3 links (1 routable), 0 devices; online")]),
            ] + Self.keptLastReading(again: 2) + [.noteActivity([.linkStateChanged(index: 2)])]
        ) {
            $0.phase = .running
            $0.rereading = false
            $0.links = [1: Self.lo, 2: Self.eth0, 3: eth1]
            $0.changedReadings = 2
            $0.publishedEverything()
            $0.startNew(up)
            $0.startNew(online)
        }
        store.send(.timerFired(.reread), effects: [.enumerate(generation: 3, subsystems: Fixture.tracked)]) {
            $0.phase = .resyncing
            $0.rereading = true
            $0.enumerationGeneration = 3
            $0.published()
        }
        store.send(
            .enumerated(generation: 3, snapshot: Snapshot(links: [Self.lo, Self.eth0, eth1], devices: [])),
            effects: [
                Fixture.log(.notice, .reread, "Read links and devices again: 3 links (1 routable), 0 devices; online"),
                .notify([.status("3 links (1 routable), 0 devices; online")]),
            ]
        ) {
            $0.phase = .running
            $0.rereading = false
            $0.changedReadings = 0
            $0.publishedEverything()
        }
        #expect(store.model.counters.resyncs == 0)
        store.sendIgnored(.timerFired(.reread))
    }

    @Test("the wait doubles while the kernel keeps changing, up to 30 s")
    func waitDoublesUpToThirtySeconds() {
        var model = Session.initiate(Model()).model
        let changing = Snapshot(links: [Self.lo, Self.eth0], devices: [], changedWhileRead: Self.changing)
        var waits: [Int] = []
        for _ in 1...8 {
            let read = Session.update(model, .enumerated(generation: model.enumerationGeneration, snapshot: changing))
            model = read.model ?? model
            for case .startTimer(.reread, let milliseconds) in read.effects { waits.append(milliseconds / 1_000) }
            let fired = Session.update(model, .timerFired(.reread))
            model = fired.model ?? model
            #expect(fired.effects == [.enumerate(generation: model.enumerationGeneration, subsystems: Fixture.tracked)])
        }
        #expect(waits == [1, 2, 4, 8, 16, 30, 30, 30])
        #expect(model.counters.resyncs == 0)
    }

    @Test("lost events while a re-read waits: the resync counts, reads everything, and a consistent one ends the wait")
    func resyncOvertakesTheReread() {
        let changing = Snapshot(links: [Self.lo, Self.eth0], devices: [], changedWhileRead: Self.changing)
        let started = Session.update(Session.initiate(Model()).model, .enumerated(generation: 1, snapshot: changing))
        var store = SessionStore(started.model!)
        #expect(store.model.changedReadings == 1)
        store.send(
            .monitorOverflowed(source: .netlink), effects: Fixture.lostEvents(.netlink, resyncs: 1, generation: 2)
        ) {
            $0.phase = .resyncing
            $0.counters.resyncs = 1
            $0.enumerationGeneration = 2
            $0.published()
        }
        // The re-read's time comes during the resync, which reads everything anyway.
        store.sendIgnored(.timerFired(.reread))
        store.send(
            .enumerated(generation: 2, snapshot: Snapshot(links: [Self.lo, Self.eth0], devices: [])),
            effects: [
                Fixture.log(
                    .notice, .resynced, "Re-read the state after lost events: 2 links (1 routable), 0 devices; online",
                    [LogField("NETDEVD_RESYNCS", "1")]),
                .notify([.status("2 links (1 routable), 0 devices; online")]),
                .cancelTimer(.reread),
            ]
        ) {
            $0.phase = .running
            $0.changedReadings = 0
            $0.publishedEverything()
        }
        store.sendIgnored(.timerFired(.reread))
    }
}
