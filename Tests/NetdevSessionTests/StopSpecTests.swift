import MobiusCore
import MobiusTest
import NetdevSession
import Testing

/// Stopping on a signal, every step checked whole: the exact model after it and the exact effects.
@Suite("Stop, step by step")
struct StopSpecTests {
    static let stopping = Effect.notify([.stopping, .status("Stopping…")])
    static let stopped = Fixture.log(.notice, .stopped, "netdevd stopped")
    static let phase = [LogField("NETDEVD_PHASE", "stopping")]

    @Test("SIGTERM with nothing running: STOPPING=1 and exit 0 at once; after that, signals and ticks do nothing")
    func stopIdle() {
        var store = SessionStore(Fixture.running())
        store.send(
            .signalReceived(.terminate),
            effects: [
                Self.stopping, Fixture.log(.notice, .stopping, "SIGTERM received; stopping", Self.phase), Self.stopped,
                .exit(status: 0),
            ]
        ) {
            $0.phase = .stopped
            $0.published()
        }
        store.sendWithoutModel(.watchdogTick)
        store.sendIgnored(.signalReceived(.interrupt))
        store.sendIgnored(.signalReceived(.hangUp))
        store.sendIgnored(.monitorOverflowed(source: .netlink))
    }

    @Test("SIGINT while enumerating stops at once; the late snapshot is ignored")
    func stopWhileEnumerating() {
        var store = SessionStore(Session.initiate(Model()).model)
        store.send(
            .signalReceived(.interrupt),
            effects: [
                Self.stopping, Fixture.log(.notice, .stopping, "SIGINT received; stopping", Self.phase), Self.stopped,
                .exit(status: 0),
            ]
        ) {
            $0.phase = .stopped
            $0.published()
        }
        store.sendIgnored(.enumerated(generation: 1, snapshot: Snapshot(links: [Fixture.loopback], devices: [])))
    }

    /// A running session whose link eth0 came up, with that link-state run (id 1) running, then SIGTERM.
    static func stoppingWithARun() -> (SessionStore, HookRun) {
        let eth0 = Link(state: Fixture.state(2, "eth0"))
        var store = SessionStore(Fixture.running([Link(state: Fixture.state(2, "eth0", carrier: false))]))
        let run = Fixture.linkRun(1, .linkState, eth0, from: .noCarrier, online: .offline)
        store.send(
            .linkChanged(eth0.state),
            effects: [
                Fixture.log(
                    .info, .linkStateChanged, "eth0: no-carrier → carrier",
                    Fixture.fields(eth0) + [LogField("NETDEVD_PREV_OPER_STATE", "no-carrier")]),
                .runHooks(run),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = eth0
            $0.startNew(run)
            $0.published(links: [2])
        }
        store.send(
            .signalReceived(.terminate),
            effects: [
                Self.stopping,
                Fixture.log(
                    .notice, .stopping, "SIGTERM received; stopping, 1 running hook run sent SIGTERM", Self.phase),
                .cancelHooks([1]),
                .startTimer(.stopDeadline, milliseconds: 10_000),
            ]
        ) {
            $0.phase = .stopping
            $0.published()
        }
        return (store, run)
    }

    @Test("SIGTERM while a hook runs: it gets SIGTERM and a deadline; its end is a notice, then exit 0")
    func stopAwaitsTheRun() {
        var (store, run) = Self.stoppingWithARun()
        store.sendWithoutModel(.watchdogTick, effects: [.notify([.watchdog])])
        let killed = HookOutcome(name: "50-slow", status: .killed(signal: 15), durationMilliseconds: 20)
        store.send(
            .hookRunFinished(HookRunResult(runID: run.id, hooks: [killed])),
            effects: [
                Fixture.log(
                    .notice, .hookRunFailed,
                    "Hooks for link-state eth0 stopped with netdevd: 50-slow: killed by signal 15",
                    Fixture.fields(run)),
                .cancelTimer(.stopDeadline),
                Self.stopped,
                .exit(status: 0),
            ]
        ) {
            // Not counted as a failed run: the stop ended it.
            $0.phase = .stopped
            $0.hooks = HookQueue()
            $0.published()
        }
    }

    @Test("the stop deadline kills a run still running (SIGKILL) and exits; its late end changes nothing")
    func stopDeadline() {
        var (store, run) = Self.stoppingWithARun()
        store.send(
            .timerFired(.stopDeadline),
            effects: [
                .cancelHooks([1]),
                Fixture.log(
                    .warning, .hookRunsCancelled, "Stop timeout passed; killed 1 hook run still running (SIGKILL)"),
                Self.stopped,
                .exit(status: 0),
            ]
        ) {
            $0.phase = .stopped
            $0.hooks = HookQueue()
            $0.published()
        }
        store.sendIgnored(Fixture.succeeded(run))
        store.sendIgnored(.timerFired(.stopDeadline))
    }

    @Test("a second signal while stopping kills the running run (SIGKILL) and exits")
    func secondSignal() {
        var (store, _) = Self.stoppingWithARun()
        store.send(
            .signalReceived(.interrupt),
            effects: [
                .cancelHooks([1]),
                Fixture.log(.warning, .hookRunsCancelled, "SIGINT again; killed 1 running hook run (SIGKILL)"),
                Self.stopped,
                .exit(status: 0),
            ]
        ) {
            $0.phase = .stopped
            $0.hooks = HookQueue()
            $0.published()
        }
    }
}
