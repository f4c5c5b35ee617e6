import MobiusCore
import MobiusTest
import NetdevSession
import Syslog

/// Sends events to the session one at a time and checks each step as a whole, as a test store does: the exact
/// model after it, written as the model before with the fields the step changes, and the exact effects, in order.
/// A step that changes another field, or makes an effect more, fewer or in another order, fails.
struct SessionStore {
    /// The model after the last step, as the session returned it.
    private(set) var model: Model

    init(_ model: Model) {
        self.model = model
    }

    /// Sends `event`: the session must publish the current model changed by `change` and nothing else, and make
    /// exactly `effects`, in this order.
    mutating func send(
        _ event: Event,
        effects: [Effect],
        file: StaticString = #file,
        line: UInt = #line,
        _ change: (inout Model) -> Void = { _ in }
    ) {
        var expected = model
        change(&expected)
        let outcome = UpdateSpec(Session.loopUpdate).given(model).when([event], file: file, line: line)
        outcome.then(
            assertThatNext(
                hasModel(expected, file: file, line: line), hasExactlyEffects(effects, file: file, line: line)))
        model = outcome.steps.last?.model ?? model
    }

    /// Sends `event`: the session must publish no model (observers are not woken) and make exactly `effects`.
    mutating func sendWithoutModel(
        _ event: Event, effects: [Effect] = [], file: StaticString = #file, line: UInt = #line
    ) {
        let outcome = UpdateSpec(Session.loopUpdate).given(model).when([event], file: file, line: line)
        outcome.then(
            assertThatNext(hasNoModel(file: file, line: line), hasExactlyEffects(effects, file: file, line: line)))
    }
}

extension SessionStore {
    /// Sends `event`, which must change nothing: no effects, and no model or the current one as it is (a published
    /// model equal to the current one tells observers nothing new).
    mutating func sendIgnored(_ event: Event, file: StaticString = #file, line: UInt = #line) {
        let current = model
        let unchanged: NextPredicate<Model, Effect> = { next in
            next.model == nil ? .success : hasModel(current, file: file, line: line)(next)
        }
        let outcome = UpdateSpec(Session.loopUpdate).given(model).when([event], file: file, line: line)
        outcome.then(assertThatNext(unchanged, hasNoEffects(file: file, line: line)))
    }
}

/// The effects and hook runs a step is expected to make, spelled out as the documentation states them.
extension Fixture {
    static let tracked = ["net", "block", "usb", "tty"]

    /// The effects of `source` losing events: the warning, the re-reading at `generation`, and the count.
    static func lostEvents(_ source: MonitorSource, resyncs: Int, generation: Int) -> [Effect] {
        [
            log(
                .warning, .resyncStarted, "The \(source.rawValue) monitor lost events; re-reading links and devices",
                [LogField("NETDEVD_MONITOR", source.rawValue), LogField("NETDEVD_RESYNCS", String(resyncs))]),
            .enumerate(generation: generation, subsystems: tracked),
            .noteActivity([.eventsLost(source: source)]),
        ]
    }

    /// A journal entry.
    static func log(
        _ priority: LogPriority, _ kind: MessageKind, _ message: String, _ fields: [LogField] = []
    ) -> Effect {
        .log(LogEntry(priority: priority, message: message, kind: kind, fields: fields))
    }

    /// The fields of every entry about a link: its name, index and operational state.
    static func fields(_ link: Link) -> [LogField] {
        [
            LogField("NETDEVD_IFNAME", link.name), LogField("NETDEVD_IFINDEX", String(link.index)),
            LogField("NETDEVD_OPER_STATE", link.operationalState.rawValue),
        ]
    }

    /// The fields of every entry about a device: its path and subsystem.
    static func fields(_ device: Device) -> [LogField] {
        [LogField("NETDEVD_DEVPATH", device.syspath), LogField("NETDEVD_SUBSYSTEM", device.subsystem)]
    }

    /// The fields of an entry about a hook run.
    static func fields(_ run: HookRun) -> [LogField] {
        [LogField("NETDEVD_HOOK_EVENT", run.event.rawValue), LogField("NETDEVD_HOOK_RUN", String(run.id))]
    }

    /// A link's hook run with the documented environment.
    static func linkRun(
        _ id: Int, _ event: HookEvent, _ link: Link, from previous: OperationalState? = nil, online: OnlineState,
        timeout: Int = 30_000
    ) -> HookRun {
        var environment = [
            LogField("NETDEVD_EVENT", event.rawValue), LogField("NETDEVD_IFNAME", link.name),
            LogField("NETDEVD_IFINDEX", String(link.index)),
            LogField("NETDEVD_OPER_STATE", event == .linkRemoved ? "removed" : link.operationalState.rawValue),
        ]
        if let previous { environment.append(LogField("NETDEVD_PREV_OPER_STATE", previous.rawValue)) }
        environment.append(LogField("NETDEVD_ADDRESSES", link.addresses.map(\.cidr).joined(separator: " ")))
        environment.append(LogField("NETDEVD_ONLINE_STATE", online.rawValue))
        return HookRun(
            id: id, subject: .link(index: link.index), event: event, subjectName: link.name, environment: environment,
            link: link, timeoutMilliseconds: timeout)
    }

    /// A device's hook run with the documented environment.
    static func deviceRun(
        _ id: Int, _ event: HookEvent, _ device: Device, from previousPath: String? = nil, online: OnlineState
    ) -> HookRun {
        var environment = [
            LogField("NETDEVD_EVENT", event.rawValue), LogField("NETDEVD_DEVPATH", device.syspath),
            LogField("NETDEVD_SUBSYSTEM", device.subsystem),
        ]
        if let previousPath { environment.append(LogField("NETDEVD_PREV_DEVPATH", previousPath)) }
        environment.append(LogField("NETDEVD_ONLINE_STATE", online.rawValue))
        return HookRun(
            id: id, subject: .device(syspath: device.syspath), event: event, subjectName: device.syspath,
            environment: environment, device: device)
    }

    /// The host's online-state hook run.
    static func onlineRun(_ id: Int, _ state: OnlineState, from previous: OnlineState) -> HookRun {
        HookRun(
            id: id, subject: .host, event: .onlineState, subjectName: "host",
            environment: [
                LogField("NETDEVD_EVENT", "online-state"), LogField("NETDEVD_ONLINE_STATE", state.rawValue),
                LogField("NETDEVD_PREV_ONLINE_STATE", previous.rawValue),
            ])
    }

    /// A hook run's result with every hook exiting 0.
    static func succeeded(_ run: HookRun) -> Event {
        .hookRunFinished(HookRunResult(runID: run.id, hooks: []))
    }
}

/// The hook queue's bookkeeping, as a step that starts, queues or ends a run changes it.
extension Model {
    /// The next change sequence, and what changed to reach it: these links and devices (none: only the phase, the
    /// configuration or a reported counter).
    mutating func published(links: [Int32] = [], devices: [String] = []) {
        changeSequence += 1
        lastChange = StateChange(links: links, devices: devices)
    }

    /// The next change sequence after an enumeration or a resync replaced the state whole.
    mutating func publishedEverything() {
        changeSequence += 1
        lastChange = .everything
    }

    /// `run`, just made, starts at once: it runs, the next run gets the following id, it is counted, and no run
    /// older than it waits.
    mutating func startNew(_ run: HookRun) {
        hooks.running[run.subject] = run
        nextHookRunID = run.id + 1
        counters.hookRunsStarted += 1
        hooks.oldestQueued = run.id + 1
    }

    /// `run`, just made, waits for a free slot (queued) or for its subject's run, held aside until that run ends:
    /// then, with nothing queued and a slot free, the search for the oldest waiting run starts after it.
    mutating func queueNew(_ run: HookRun) {
        hooks.waiting[run.subject] = run
        nextHookRunID = run.id + 1
        if hooks.running[run.subject] == nil {
            hooks.queued[run.id] = run.subject
        } else if hooks.queued.isEmpty && hooks.running.count < max(1, configuration.hookParallelism) {
            hooks.oldestQueued = run.id + 1
        }
    }

    /// The waiting `run` starts; the search for the oldest waiting run then starts at `oldestQueued`.
    mutating func startWaiting(_ run: HookRun, oldestQueued: Int) {
        hooks.waiting[run.subject] = nil
        hooks.queued[run.id] = nil
        hooks.running[run.subject] = run
        counters.hookRunsStarted += 1
        hooks.oldestQueued = oldestQueued
    }

    /// The waiting `run` is dropped before it ran: counted as stale.
    mutating func drop(_ run: HookRun) {
        hooks.waiting[run.subject] = nil
        hooks.queued[run.id] = nil
        counters.staleHookRunsDropped += 1
        hooks.droppedSinceSummary += 1
    }
}
