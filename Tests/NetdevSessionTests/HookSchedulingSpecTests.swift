import MobiusCore
import MobiusTest
import NetdevSession
import Testing

/// Hook scheduling, every step checked whole: which run starts, waits, is replaced or dropped, and when.
@Suite("Hook scheduling, step by step")
struct HookSchedulingSpecTests {
    static let noCarrier = Link(state: Fixture.state(2, "eth0", carrier: false))
    static let carrier = Link(state: Fixture.state(2, "eth0"))
    static let off = Link(state: Fixture.state(2, "eth0", up: false))

    static func changed(_ link: Link, from old: OperationalState) -> Effect {
        Fixture.log(
            .info, .linkStateChanged, "\(link.name): \(old.rawValue) → \(link.operationalState.rawValue)",
            Fixture.fields(link) + [LogField("NETDEVD_PREV_OPER_STATE", old.rawValue)])
    }

    static func finished(_ run: HookRun) -> Effect {
        Fixture.log(
            .debug, .hookRunFinished, "Hooks for \(run.event.rawValue) \(run.subjectName) ran: 0 hooks in 0 ms",
            Fixture.fields(run))
    }

    static func dropped(_ run: HookRun, _ reason: String) -> Effect {
        Fixture.log(
            .debug, .hookRunDropped, "Dropped the \(run.event.rawValue) hook run for \(run.subjectName): \(reason)",
            Fixture.fields(run))
    }

    static let summaryTimer = Effect.startTimer(.dropSummary, milliseconds: 10_000)

    /// eth0 comes up (from no-carrier) in a running session: its link-state run (id 1) starts.
    static func eth0Up(_ configuration: Configuration = Configuration()) -> (SessionStore, HookRun) {
        var store = SessionStore(Fixture.running([noCarrier], configuration: configuration))
        let run = Fixture.linkRun(1, .linkState, carrier, from: .noCarrier, online: .offline)
        store.send(
            .linkChanged(carrier.state),
            effects: [changed(carrier, from: .noCarrier), .runHooks(run), .noteActivity([.linkStateChanged(index: 2)])]
        ) {
            $0.links[2] = carrier
            $0.startNew(run)
            $0.published(links: [2])
        }
        return (store, run)
    }

    @Test("one run per subject at a time: a change waits, a newer one replaces it, the end starts the newest")
    func serialAndReplaced() {
        var (store, first) = Self.eth0Up()
        let waiting = Fixture.linkRun(2, .linkState, Self.noCarrier, from: .carrier, online: .offline)
        store.send(
            .linkChanged(Self.noCarrier.state),
            effects: [Self.changed(Self.noCarrier, from: .carrier), .noteActivity([.linkStateChanged(index: 2)])]
        ) {
            $0.links[2] = Self.noCarrier
            $0.queueNew(waiting)
            $0.published(links: [2])
        }
        // From the state the hooks last saw (carrier), not the replaced run's.
        let newest = Fixture.linkRun(3, .linkState, Self.off, from: .carrier, online: .offline)
        store.send(
            .linkChanged(Self.off.state),
            effects: [
                Self.changed(Self.off, from: .noCarrier), Self.summaryTimer,
                Self.dropped(waiting, "its link-state run with newer state replaced it"),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = Self.off
            $0.drop(waiting)
            $0.queueNew(newest)
            $0.published(links: [2])
        }
        store.send(Fixture.succeeded(first), effects: [Self.finished(first), .runHooks(newest)]) {
            $0.startWaiting(newest, oldestQueued: 4)
        }
        let result = HookRunResult(
            runID: newest.id,
            hooks: [
                HookOutcome(name: "10-ok", status: .exited(0), durationMilliseconds: 5),
                HookOutcome(name: "20-bad", status: .exited(3), durationMilliseconds: 7),
                HookOutcome(name: "30-slow", status: .timedOut, durationMilliseconds: 30_000),
            ])
        store.send(
            .hookRunFinished(result),
            effects: [
                Fixture.log(
                    .warning, .hookRunFailed,
                    "Hooks for link-state eth0 failed: 20-bad: exited with status 3; 30-slow: timed out",
                    Fixture.fields(newest))
            ]
        ) {
            $0.hooks.running = [:]
            $0.counters.hookRunsFailed = 1
        }
        store.send(
            .timerFired(.dropSummary),
            effects: [
                Fixture.log(
                    .info, .hookRunDropped,
                    "Dropped 1 queued hook run before they ran: newer runs of the same subject replaced them, or their "
                        + "subject was removed again (1 since start)",
                    [LogField("NETDEVD_HOOK_RUNS_DROPPED", "1"), LogField("NETDEVD_STALE_HOOK_RUNS_DROPPED", "1")])
            ]
        ) { $0.hooks.droppedSinceSummary = 0 }
        store.sendIgnored(.timerFired(.dropSummary))
    }

    @Test("back in the state its hooks last saw: the waiting change is dropped and nothing more runs")
    func backToTheStateTold() {
        var (store, first) = Self.eth0Up()
        let waiting = Fixture.linkRun(2, .linkState, Self.noCarrier, from: .carrier, online: .offline)
        store.send(
            .linkChanged(Self.noCarrier.state),
            effects: [Self.changed(Self.noCarrier, from: .carrier), .noteActivity([.linkStateChanged(index: 2)])]
        ) {
            $0.links[2] = Self.noCarrier
            $0.queueNew(waiting)
            $0.published(links: [2])
        }
        store.send(
            .linkChanged(Self.carrier.state),
            effects: [
                Self.changed(Self.carrier, from: .noCarrier), Self.summaryTimer,
                Self.dropped(waiting, "eth0 is back in the state its hooks last saw"),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = Self.carrier
            $0.drop(waiting)
            $0.published(links: [2])
        }
        store.send(Fixture.succeeded(first), effects: [Self.finished(first)]) {
            $0.hooks.running = [:]
            $0.hooks.oldestQueued = 3
        }
    }

    /// A 2 s debounce, and eth0 gone from no-carrier to carrier: the change is held. The store, and the timer and
    /// activity effects every further change of eth0 makes.
    static func heldCarrier() -> (store: SessionStore, timer: Effect, activity: Effect) {
        let configuration = Configuration(debounceMilliseconds: 2_000)
        var store = SessionStore(Fixture.running([Self.noCarrier], configuration: configuration))
        let timer = Effect.startTimer(.debounce(.link(index: 2)), milliseconds: 2_000)
        let activity = Effect.noteActivity([.linkStateChanged(index: 2)])
        store.send(
            .linkChanged(Self.carrier.state), effects: [Self.changed(Self.carrier, from: .noCarrier), timer, activity]
        ) {
            $0.links[2] = Self.carrier
            $0.debouncing = [.link(index: 2): .noCarrier]
            $0.published(links: [2])
        }
        return (store, timer, activity)
    }

    @Test("with a debounce, every change is logged and restarts the timer; hooks run once for the state that held")
    func debounce() {
        var (store, timer, activity) = Self.heldCarrier()
        store.send(.linkChanged(Self.off.state), effects: [Self.changed(Self.off, from: .carrier), timer, activity]) {
            $0.links[2] = Self.off
            $0.published(links: [2])
        }
        let run = Fixture.linkRun(1, .linkState, Self.off, from: .noCarrier, online: .offline)
        store.send(.timerFired(.debounce(.link(index: 2))), effects: [.runHooks(run)]) {
            $0.debouncing = [:]
            $0.startNew(run)
        }
        store.sendIgnored(.timerFired(.debounce(.link(index: 2))))
    }

    @Test("a link that flaps back to where it was before the debounce runs no hook")
    func debounceBackToStart() {
        var (store, timer, activity) = Self.heldCarrier()
        store.send(
            .linkChanged(Self.noCarrier.state),
            effects: [Self.changed(Self.noCarrier, from: .carrier), timer, activity]
        ) {
            $0.links[2] = Self.noCarrier
            $0.published(links: [2])
        }
        store.send(.timerFired(.debounce(.link(index: 2))), effects: []) { $0.debouncing = [:] }
    }

    @Test("subjects share the slots: a second link waits for a free one and starts when a run ends")
    func parallelism() {
        let eth1 = Link(state: Fixture.state(3, "eth1"))
        var store = SessionStore(
            Fixture.running(
                [Self.noCarrier, Link(state: Fixture.state(3, "eth1", carrier: false))],
                configuration: Configuration(hookParallelism: 1)))
        let first = Fixture.linkRun(1, .linkState, Self.carrier, from: .noCarrier, online: .offline)
        store.send(
            .linkChanged(Self.carrier.state),
            effects: [
                Self.changed(Self.carrier, from: .noCarrier), .runHooks(first),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = Self.carrier
            $0.startNew(first)
            $0.published(links: [2])
        }
        let second = Fixture.linkRun(2, .linkState, eth1, from: .noCarrier, online: .offline)
        store.send(
            .linkChanged(eth1.state),
            effects: [Self.changed(eth1, from: .noCarrier), .noteActivity([.linkStateChanged(index: 3)])]
        ) {
            $0.links[3] = eth1
            $0.queueNew(second)
            $0.published(links: [3])
        }
        store.send(Fixture.succeeded(first), effects: [Self.finished(first), .runHooks(second)]) {
            $0.hooks.running = [:]
            $0.startWaiting(second, oldestQueued: 3)
        }
    }

    @Test("a link added and removed before its added run started: neither runs, and the cancelled run is counted")
    func addedThenRemoved() {
        var (store, first) = Self.eth0Up(Configuration(hookParallelism: 1))
        let eth1 = Link(state: Fixture.state(3, "eth1"))
        let added = Fixture.linkRun(2, .linkAdded, eth1, online: .offline)
        store.send(
            .linkChanged(eth1.state),
            effects: [
                Fixture.log(.info, .linkAdded, "eth1: added, carrier", Fixture.fields(eth1)),
                .noteActivity([.linkAdded(index: 3)]),
            ]
        ) {
            $0.links[3] = eth1
            $0.queueNew(added)
            $0.published(links: [3])
        }
        store.send(
            .linkRemoved(index: 3),
            effects: [
                Fixture.log(.info, .linkRemoved, "eth1: removed", Fixture.fields(eth1)), Self.summaryTimer,
                Self.dropped(added, "eth1 was removed before its link-added hooks ran; no link-removed run"),
                .noteActivity([.linkRemoved(index: 3)]),
            ]
        ) {
            $0.links[3] = nil
            $0.drop(added)
            $0.published(links: [3])
        }
        store.send(Fixture.succeeded(first), effects: [Self.finished(first)]) {
            $0.hooks.running = [:]
            $0.hooks.oldestQueued = 3
        }
    }
}
