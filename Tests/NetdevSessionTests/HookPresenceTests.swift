import MobiusCore
import NetdevSession
import Testing

@Suite("Hook runs only while hooks are installed")
struct HookPresenceTests {
    @Test(
        "with no hook installed, changes are logged and queue no run and no debounce; the first change after one is installed runs it"
    )
    func noHookNoRun() throws {
        var model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))],
            configuration: Configuration(debounceMilliseconds: 500))
        let told = Session.update(model, .hooksInstalled(false))
        model = try #require(told.model)
        #expect(told.effects.isEmpty)
        // Told again: nothing changes, and no model is published.
        #expect(Session.update(model, .hooksInstalled(false)) == .noChange)

        let disk = Device(syspath: "/sys/devices/virtual/block/loop7", sysname: "loop7", subsystem: "block")
        let events: [Event] = [
            .linkChanged(Fixture.state(3, "eth1")), .linkChanged(Fixture.state(2, "eth0")),
            .addressAdded(index: 2, Fixture.v4), .deviceChanged(disk, action: "add"),
            .deviceRemoved(syspath: disk.syspath), .linkRemoved(index: 3),
        ]
        var kinds: [MessageKind] = []
        for event in events {
            let next = Session.update(model, event)
            model = try #require(next.model)
            #expect(Fixture.runs(next.effects).isEmpty, "\(event)")
            #expect(!next.effects.contains { if case .startTimer = $0 { true } else { false } }, "\(event)")
            kinds += Fixture.logs(next.effects).map(\.kind)
        }
        #expect(
            kinds == [
                .linkAdded, .linkStateChanged, .addressAdded, .linkStateChanged, .onlineStateChanged, .deviceAdded,
                .deviceRemoved, .linkRemoved,
            ])
        #expect(model.onlineState == .online && model.hooks.running.isEmpty && model.debouncing.isEmpty)
        #expect(model.counters.hookRunsStarted == 0)

        model = try #require(Session.update(model, .hooksInstalled(true)).model)
        let added = Session.update(model, .linkChanged(Fixture.state(4, "eth2")))
        #expect(Fixture.runs(added.effects).map(\.event) == [.linkAdded])
        #expect(Fixture.runs(added.effects).first?.subjectName == "eth2")
    }

    @Test("a run queued before the hooks went still ends as any run does, and the next run waiting for it starts")
    func runsInFlightEnd() throws {
        var model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))], configuration: Configuration(hookParallelism: 1))
        let first = Session.update(model, .linkChanged(Fixture.state(2, "eth0")))
        model = try #require(first.model)
        let running = try #require(Fixture.runs(first.effects).first)
        model = try #require(Session.update(model, .linkChanged(Fixture.state(3, "eth1"))).model)
        #expect(model.hooks.waiting.count == 1)
        model = try #require(Session.update(model, .hooksInstalled(false)).model)
        let finished = Session.update(model, .hookRunFinished(HookRunResult(runID: running.id, hooks: [])))
        #expect(Fixture.runs(finished.effects).map(\.subjectName) == ["eth1"])
    }

    @Test("a change held for the debounce when the hooks went away runs nothing when its time comes")
    func heldChangeWithoutHooks() throws {
        var model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))],
            configuration: Configuration(debounceMilliseconds: 500))
        model = try #require(Session.update(model, .linkChanged(Fixture.state(2, "eth0"))).model)
        #expect(model.debouncing == [.link(index: 2): .noCarrier])
        model = try #require(Session.update(model, .hooksInstalled(false)).model)
        let expired = Session.update(model, .timerFired(.debounce(.link(index: 2))))
        #expect(Fixture.runs(expired.effects).isEmpty)
        #expect(expired.model?.debouncing == [:])
        #expect((expired.model ?? model).hooks.waiting.isEmpty)
    }
}
