import MobiusCore
import MobiusTest
import NetdevSession
import Testing

/// The main transitions written as MobiusTest specs: given a model, when these events, then exactly this.
@Suite("Session specs")
struct SessionSpecTests {
    @Test("InitSpec: a session starts by enumerating, whatever model it resumes from")
    func initSpec() {
        var resumed = Fixture.running([Fixture.routable(2, "eth0")])
        resumed.phase = .running
        var expected = resumed
        expected.phase = .enumerating
        expected.enumerationGeneration += 1
        expected.changeSequence += 1
        InitSpec(Session.initiate).when(resumed).then(
            assertThatFirst(
                hasModel(expected),
                hasExactlyEffects([
                    .notify([.status("Enumerating links and devices…")]),
                    .enumerate(generation: 2, subsystems: ["net", "block", "usb", "tty"]),
                ])
            )
        )
    }

    @Test("UpdateSpec: start, a link gets an address, a watchdog tick, SIGTERM — every step checked")
    func everyStep() {
        let eth0 = Link(state: Fixture.state(2, "eth0"))
        let starting = Session.initiate(Model()).model
        UpdateSpec(Session.loopUpdate)
            .given(starting)
            .when(
                .enumerated(generation: 1, snapshot: Snapshot(links: [Fixture.loopback, eth0], devices: [])),
                .addressAdded(index: 2, Fixture.v4),
                .watchdogTick,
                .signalReceived(.terminate)
            )
            .thenEachStep(
                { step in
                    #expect(step.model.phase == .running)
                    #expect(
                        Fixture.notifications(step.lastNext.effects) == [
                            .ready, .status("2 links (0 routable), 0 devices; offline"),
                        ])
                },
                { step in
                    #expect(step.model.links[2]?.operationalState == .routable)
                    #expect(step.model.onlineState == .online)
                    #expect(
                        Fixture.logs(step.lastNext.effects).map(\.kind) == [
                            .addressAdded, .linkStateChanged, .onlineStateChanged,
                        ])
                },
                assertThatNext(hasEffects([.notify([.watchdog])])),
                { step in
                    // The address made eth0 routable and the host online: two hook runs are still running.
                    #expect(step.model.phase == .stopping)
                    #expect(step.model.hooks.running.count == 2)
                    #expect(step.lastNext.effects.last == .startTimer(.stopDeadline, milliseconds: 10_000))
                }
            )
    }
}
