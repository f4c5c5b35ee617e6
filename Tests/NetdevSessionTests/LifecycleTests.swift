import MobiusCore
import MobiusTest
import NetdevSession
import Testing

@Suite("Session lifecycle")
struct LifecycleTests {
    @Test("initiate enumerates with a new generation and buffers from then on")
    func initiate() {
        let first = Session.initiate(Model())
        #expect(first.model.phase == .enumerating)
        #expect(first.model.enumerationGeneration == 1)
        #expect(
            first.effects == [
                .notify([.status("Enumerating links and devices…")]),
                .enumerate(generation: 1, subsystems: ["net", "block", "usb", "tty"]),
            ]
        )
        let again = Session.initiate(first.model)
        #expect(again.model.enumerationGeneration == 2)
    }

    @Test("READY=1 only after the snapshot, with a STATUS line counting links and devices")
    func readyAfterSnapshot() {
        let starting = Session.initiate(Model()).model
        let link = Fixture.routable(2, "eth0")
        let disk = Device(syspath: "/sys/devices/virtual/block/loop0", sysname: "loop0", subsystem: "block")
        let next = Session.update(
            starting, .enumerated(generation: 1, snapshot: Snapshot(links: [Fixture.loopback, link], devices: [disk])))
        let model = next.model!
        #expect(model.phase == .running)
        #expect(model.links.count == 2 && model.devices.count == 1)
        #expect(Fixture.notifications(next.effects) == [.ready, .status("2 links (1 routable), 1 device; online")])
        let logs = Fixture.logs(next.effects)
        #expect(logs.map(\.kind) == [.linkAdded, .linkAdded, .started])
        #expect(logs.last?.message == "netdevd started: 2 links (1 routable), 1 device; online")
        #expect(Fixture.runs(next.effects).isEmpty)
    }

    @Test("events during enumeration are buffered, not announced, then replayed on the snapshot in order")
    func bufferedDuringEnumeration() {
        var model = Session.initiate(Model()).model
        let eth0 = Fixture.routable(2, "eth0")
        // eth0 is removed while the dump runs: the snapshot still has it, the replay removes it.
        let removed = Session.update(model, .linkRemoved(index: 2))
        #expect(removed.effects.isEmpty)
        model = removed.model!
        model = Session.update(model, .linkChanged(Fixture.state(3, "eth1"))).model!
        model = Session.update(model, .addressAdded(index: 3, Fixture.v6)).model!
        #expect(model.buffered.count == 3)
        let done = Session.update(
            model, .enumerated(generation: 1, snapshot: Snapshot(links: [Fixture.loopback, eth0], devices: [])))
        #expect(done.model?.links[2] == nil)
        #expect(done.model?.links[3]?.addresses == [Fixture.v6])
        #expect(done.model?.links[3]?.operationalState == .routable)
        #expect(done.model?.buffered.isEmpty == true)
    }

    @Test("a snapshot of an older generation is ignored")
    func staleSnapshot() {
        var model = Session.initiate(Model()).model
        model = Session.update(model, .monitorOverflowed(source: .netlink)).model!
        UpdateSpec(Session.loopUpdate)
            .given(model)
            .when(.enumerated(generation: 1, snapshot: Snapshot(links: [Fixture.loopback], devices: [])))
            .then(assertThatNext(hasNoEffects()))
        #expect(
            Session.update(model, .enumerated(generation: 1, snapshot: Snapshot(links: [], devices: []))).model?.phase
                == .enumerating)
    }

    @Test("an overflow while running resyncs with the same buffering and announces what changed meanwhile")
    func overflowResync() {
        var model = Fixture.running([Fixture.routable(2, "eth0")])
        let overflow = Session.update(model, .monitorOverflowed(source: .udev))
        model = overflow.model!
        #expect(model.phase == .resyncing)
        #expect(model.counters.resyncs == 1)
        #expect(overflow.effects.contains(.enumerate(generation: 2, subsystems: ["net", "block", "usb", "tty"])))
        #expect(Fixture.logs(overflow.effects).first?.kind == .resyncStarted)
        #expect(Fixture.logs(overflow.effects).first?.field("NETDEVD_MONITOR") == "udev")
        // An address is added during the resync: buffered, then replayed.
        model = Session.update(model, .addressAdded(index: 2, Fixture.v6)).model!
        // While events were lost, eth0 lost its IPv4 address (the snapshot shows it) and eth1 appeared.
        let snapshot = Snapshot(
            links: [Fixture.loopback, Link(state: Fixture.state(2, "eth0")), Fixture.routable(3, "eth1")], devices: [])
        let done = Session.update(model, .enumerated(generation: 2, snapshot: snapshot))
        #expect(done.model?.phase == .running)
        #expect(done.model?.links[2]?.addresses == [Fixture.v6])
        let kinds = Fixture.logs(done.effects).map(\.kind)
        #expect(kinds == [.addressAdded, .addressRemoved, .linkAdded, .resynced])
        #expect(Fixture.runs(done.effects).map(\.event) == [.linkAdded])
        #expect(!Fixture.notifications(done.effects).contains(.ready))
    }

    @Test("two overflows in a row restart the resync; only the newest snapshot counts")
    func twoOverflows() {
        var model = Fixture.running()
        model = Session.update(model, .monitorOverflowed(source: .netlink)).model!
        model = Session.update(model, .linkChanged(Fixture.state(5, "veth5"))).model!
        let second = Session.update(model, .monitorOverflowed(source: .netlink))
        model = second.model!
        #expect(model.counters.resyncs == 2)
        #expect(model.enumerationGeneration == 3)
        #expect(model.buffered.isEmpty)
        #expect(second.effects.contains(.enumerate(generation: 3, subsystems: ["net", "block", "usb", "tty"])))
        #expect(
            Session.update(model, .enumerated(generation: 2, snapshot: Snapshot(links: [], devices: []))).effects
                .isEmpty)
        let done = Session.update(
            model, .enumerated(generation: 3, snapshot: Snapshot(links: [Fixture.loopback], devices: [])))
        #expect(done.model?.phase == .running)
    }

    @Test("the watchdog tick becomes WATCHDOG=1 in every phase but stopped")
    func watchdog() {
        for model in [Session.initiate(Model()).model, Fixture.running()] {
            #expect(Session.update(model, .watchdogTick).effects == [.notify([.watchdog])])
        }
        var stopped = Fixture.running()
        stopped = Session.update(stopped, .signalReceived(.terminate)).model!
        #expect(stopped.phase == .stopped)
        #expect(Session.update(stopped, .watchdogTick).effects.isEmpty)
    }
}
