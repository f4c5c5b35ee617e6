import MobiusCore
import MobiusTest
import NetdevSession
import Testing

/// What a stop and a reload do to hook runs, every step checked whole.
@Suite("Hook runs at stop and reload, step by step")
struct HookCancellationSpecTests {
    static let noCarrier = Link(state: Fixture.state(2, "eth0", carrier: false))
    static let carrier = Link(state: Fixture.state(2, "eth0"))

    @Test("a stop drops waiting runs, cancels debounce timers, counts the drops once, and waits for the running run")
    func stopCancels() {
        let configuration = Configuration(debounceMilliseconds: 2_000, hookParallelism: 1)
        var store = SessionStore(Fixture.running([Self.noCarrier], configuration: configuration))
        let sda = Device(syspath: "/sys/block/sda", sysname: "sda", subsystem: "block")
        let added = Fixture.deviceRun(1, .deviceAdded, sda, online: .offline)
        store.send(
            .deviceChanged(sda, action: "add"),
            effects: [
                Fixture.log(.info, .deviceAdded, "block device sda added", Fixture.fields(sda)), .runHooks(added),
            ]
        ) {
            $0.devices[sda.syspath] = sda
            $0.startNew(added)
            $0.published(devices: [sda.syspath])
        }
        let change = Fixture.log(.info, .deviceChanged, "block device sda: change", Fixture.fields(sda))
        let stale = Fixture.deviceRun(2, .deviceChanged, sda, online: .offline)
        store.send(.deviceChanged(sda, action: "change"), effects: [change]) {
            $0.queueNew(stale)
            $0.published(devices: [sda.syspath])
        }
        let newest = Fixture.deviceRun(3, .deviceChanged, sda, online: .offline)
        store.send(
            .deviceChanged(sda, action: "change"),
            effects: [
                change, .startTimer(.dropSummary, milliseconds: 10_000),
                Fixture.log(
                    .debug, .hookRunDropped,
                    "Dropped the device-changed hook run for /sys/block/sda: its device-changed run with newer state "
                        + "replaced it",
                    Fixture.fields(stale)),
            ]
        ) {
            $0.drop(stale)
            $0.queueNew(newest)
            $0.published(devices: [sda.syspath])
        }
        store.send(
            .linkChanged(Self.carrier.state),
            effects: [
                Fixture.log(
                    .info, .linkStateChanged, "eth0: no-carrier → carrier",
                    Fixture.fields(Self.carrier) + [LogField("NETDEVD_PREV_OPER_STATE", "no-carrier")]),
                .startTimer(.debounce(.link(index: 2)), milliseconds: 2_000),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = Self.carrier
            $0.debouncing = [.link(index: 2): .noCarrier]
            $0.published(links: [2])
        }
        store.send(
            .signalReceived(.terminate),
            effects: [
                .cancelTimer(.debounce(.link(index: 2))),
                .notify([.stopping, .status("Stopping…")]),
                Fixture.log(
                    .notice, .stopping,
                    "SIGTERM received; stopping, 1 queued hook run dropped, 1 running hook run sent SIGTERM",
                    [LogField("NETDEVD_PHASE", "stopping")]),
                .cancelHooks([1]),
                .startTimer(.stopDeadline, milliseconds: 10_000),
            ]
        ) {
            $0.phase = .stopping
            $0.hooks.waiting = [:]
            $0.hooks.queued = [:]
            $0.debouncing = [:]
            $0.published()
        }
        let outcome = HookOutcome(name: "50-log", status: .exited(0), durationMilliseconds: 4)
        store.send(
            .hookRunFinished(HookRunResult(runID: added.id, hooks: [outcome])),
            effects: [
                Fixture.log(
                    .notice, .hookRunFinished,
                    "Hooks for device-added /sys/block/sda stopped with netdevd: 50-log: exited with status 0",
                    Fixture.fields(added)),
                .cancelTimer(.stopDeadline),
                .cancelTimer(.dropSummary),
                Fixture.log(
                    .info, .hookRunDropped,
                    "Dropped 1 queued hook run before they ran: newer runs of the same subject replaced them, or their "
                        + "subject was removed again (1 since start)",
                    [LogField("NETDEVD_HOOK_RUNS_DROPPED", "1"), LogField("NETDEVD_STALE_HOOK_RUNS_DROPPED", "1")]),
                Fixture.log(.notice, .stopped, "netdevd stopped"),
                .exit(status: 0),
            ]
        ) {
            $0.phase = .stopped
            $0.hooks = HookQueue()
            $0.published()
        }
    }

    @Test("a reload cancels no run: changes meanwhile run hooks, and a waiting run keeps the timeout it was made with")
    func reloadKeepsRuns() {
        let eth1 = Link(state: Fixture.state(3, "eth1"))
        var store = SessionStore(
            Fixture.running(
                [Self.noCarrier, Link(state: Fixture.state(3, "eth1", carrier: false))],
                configuration: Configuration(hookParallelism: 1)))
        let first = Fixture.linkRun(1, .linkState, Self.carrier, from: .noCarrier, online: .offline)
        store.send(
            .linkChanged(Self.carrier.state),
            effects: [
                Fixture.log(
                    .info, .linkStateChanged, "eth0: no-carrier → carrier",
                    Fixture.fields(Self.carrier) + [LogField("NETDEVD_PREV_OPER_STATE", "no-carrier")]),
                .runHooks(first), .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = Self.carrier
            $0.startNew(first)
            $0.published(links: [2])
        }
        store.send(
            .signalReceived(.hangUp),
            effects: [.notify([.reloading, .status("Reloading configuration (SIGHUP)…")]), .loadConfiguration]
        ) {
            $0.phase = .reloading
            $0.reloadInFlight = true
            $0.published()
        }
        let second = Fixture.linkRun(2, .linkState, eth1, from: .noCarrier, online: .offline)
        store.send(
            .linkChanged(eth1.state),
            effects: [
                Fixture.log(
                    .info, .linkStateChanged, "eth1: no-carrier → carrier",
                    Fixture.fields(eth1) + [LogField("NETDEVD_PREV_OPER_STATE", "no-carrier")]),
                .noteActivity([.linkStateChanged(index: 3)]),
            ]
        ) {
            $0.links[3] = eth1
            $0.queueNew(second)
            $0.published(links: [3])
        }
        let shorter = Configuration(hookTimeoutMilliseconds: 5_000, hookParallelism: 1)
        let status = "3 links (0 routable), 0 devices; offline"
        store.send(
            .configurationLoaded(shorter, warnings: []),
            effects: [
                Fixture.log(.notice, .reloaded, "Configuration reloaded: \(status)"),
                .notify([.ready, .status(status)]),
            ]
        ) {
            $0.configuration = shorter
            $0.phase = .running
            $0.reloadInFlight = false
            $0.lastReload = ReloadOutcome(covers: 0, warnings: [], errors: [])
            $0.published()
        }
        store.send(
            Fixture.succeeded(first),
            effects: [
                Fixture.log(
                    .debug, .hookRunFinished, "Hooks for link-state eth0 ran: 0 hooks in 0 ms", Fixture.fields(first)),
                .runHooks(second),
            ]
        ) {
            $0.hooks.running = [:]
            $0.startWaiting(second, oldestQueued: 3)
        }
        let third = Fixture.linkRun(3, .linkState, Self.noCarrier, from: .carrier, online: .offline, timeout: 5_000)
        store.send(
            .linkChanged(Self.noCarrier.state),
            effects: [
                Fixture.log(
                    .info, .linkStateChanged, "eth0: carrier → no-carrier",
                    Fixture.fields(Self.noCarrier) + [LogField("NETDEVD_PREV_OPER_STATE", "carrier")]),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = Self.noCarrier
            $0.queueNew(third)
            $0.published(links: [2])
        }
    }
}
