public import MobiusCore
import Syslog

/// The netdevd session as a Mobius loop's pure functions: ``initiate(_:)`` and ``update(_:_:)``.
///
/// Everything that happens to the daemon goes through `update`: kernel and udev changes, lost events, signals,
/// reloads, timers, hook results. It reads nothing but the model and the event, so every rule is a unit test.
public enum Session {
    /// How many events may wait while enumerating before the session gives up on that enumeration and starts
    /// another (a burst that large means the snapshot is stale anyway).
    public static let bufferLimit = 10_000

    /// The loop's update function.
    public static let loopUpdate = Update<Model, Event, Effect> { model, event in update(model, event) }

    /// Starts (or resumes) a session: the monitors are already subscribed when this runs (they are the loop's
    /// event sources), so enumerating now cannot miss a change; events until the snapshot arrives are buffered.
    public static func initiate(_ model: Model) -> First<Model, Effect> {
        var next = model
        next.phase = .enumerating
        next.buffered = []
        next.enumerationGeneration += 1
        next.hooks = HookQueue()
        next.debouncing = [:]
        next.reloadInFlight = false
        next.changeSequence += 1
        next.lastChange = .everything
        // networkd's states first: their answer is then read before the snapshot's, whose links run with them.
        let watch: [Effect] =
            next.configuration.networkdDispatcherDirectories.isEmpty ? [] : [.watchNetworkdStates(true)]
        return First(
            model: next,
            effects: watch + [
                .notify([.status("Enumerating links and devices…")]),
                .enumerate(generation: next.enumerationGeneration, subsystems: next.configuration.trackedSubsystems),
            ]
        )
    }

    /// Answers `event` on `model`.
    public static func update(_ model: Model, _ event: Event) -> Next<Model, Effect> {
        var context = Transition(model)
        switch event {
        case .enumerated(let generation, let snapshot):
            context.finishEnumeration(generation: generation, snapshot: snapshot)
        case .enumerationFailed(let generation, let reason):
            context.enumerationFailed(generation: generation, reason: reason)
        case .linkChanged, .linkRemoved, .addressAdded, .addressRemoved, .defaultRouteAdded, .defaultRouteRemoved,
            .deviceChanged, .deviceRemoved, .deviceMoved:
            context.stateChanged(event)
        case .monitorOverflowed(let source):
            context.overflowed(source)
        case .signalReceived(.terminate), .signalReceived(.interrupt):
            context.stop(reason: event)
        case .signalReceived(.hangUp):
            context.requestReload(by: "SIGHUP")
        case .reloadRequested(let client):
            // Numbered in the order the control service sent them (it numbers its callers the same way).
            context.model.reloadRequests += 1
            context.requestReload(by: client)
        case .configurationLoaded(let configuration, let warnings):
            context.configurationLoaded(configuration, warnings: warnings)
        case .configurationRejected(let diagnostics):
            context.configurationRejected(diagnostics)
        case .watchdogTick:
            // Not a model change: no new model is published, so observers are not woken every tick.
            return model.phase == .stopped ? .noChange : .dispatchEffects([.notify([.watchdog])])
        case .timerFired(let timer):
            context.timerFired(timer)
        case .hookRunFinished(let result):
            context.hookRunFinished(result)
        case .hooksInstalled(let installed):
            // The next change queues runs again, or none; what is queued or running goes on.
            guard installed != model.hooksInstalled else { return .noChange }
            context.model.hooksInstalled = installed
        case .networkdStatesRead(let running, let administrative):
            context.networkdStatesRead(running: running, administrative: administrative)
        case .networkdStateChanged(let index, let administrative):
            context.networkdStateChanged(index: index, administrative: administrative)
        }
        return context.next
    }
}

/// One step of the session in progress: the model being changed and the effects collected, in order.
struct Transition {
    /// What `next` compares against; not the whole model, which would make every change copy its dictionaries.
    let phaseBefore: Phase
    let configurationBefore: Configuration
    let sequenceBefore: Int
    /// The one reported counter that can change while links, devices, phase and configuration stay the same.
    let droppedBefore: Int
    var model: Model
    var effects: [Effect] = []
    /// What the metrics count, sent as one ``Effect/noteActivity(_:)`` after the step's other effects.
    var activity: [Activity] = []
    /// Links or devices changed (set where the change is made, so `next` need not compare whole dictionaries).
    var stateTouched = false
    /// Which links and devices the step touched: the model's ``Model/lastChange`` when it gets a new sequence.
    var change = StateChange()

    init(_ model: Model) {
        phaseBefore = model.phase
        configurationBefore = model.configuration
        sequenceBefore = model.changeSequence
        droppedBefore = model.counters.staleHookRunsDropped
        self.model = model
    }

    /// The event changed nothing in the model (a uevent of an untracked subsystem, a state the model already
    /// holds): `next` then publishes no model.
    var unchanged = false

    /// `.next` with the changed model and effects, bumping the change sequence when clients would see a change. Ends
    /// the step: the activity joins the effects in place (a copy of the effects here was an allocation per event).
    var next: Next<Model, Effect> {
        mutating get {
            if !activity.isEmpty {
                effects.append(.noteActivity(activity))
                activity = []
            }
            if unchanged {
                return effects.isEmpty ? .noChange : .dispatchEffects(effects)
            }
            if stateTouched || model.phase != phaseBefore || model.configuration != configurationBefore
                || model.counters.staleHookRunsDropped != droppedBefore
            {
                model.changeSequence = sequenceBefore + 1
                model.lastChange = change
            }
            return .next(model, effects: effects)
        }
    }

    /// Adds a journal entry when ``makes(_:)`` says so.
    mutating func log(_ priority: LogPriority, _ kind: MessageKind, _ message: String, _ fields: [LogField] = []) {
        guard makes(priority) else { return }
        effects.append(.log(LogEntry(priority: priority, message: message, kind: kind, fields: fields)))
    }

    /// `true` when an entry of `priority` is made: the daemon keeps that priority (the one place the journal's level
    /// applies). A caller building an entry a burst would make thousands of times asks first.
    func makes(_ priority: LogPriority) -> Bool {
        priority <= model.maximumLogPriority
    }

    /// `STATUS=` text: what is tracked and whether the host is online.
    var statusLine: String {
        let routable = model.links.values.filter { $0.operationalState == .routable && !$0.state.isLoopback }.count
        return
            "\(quantity(model.links.count, "link")) (\(routable) routable), \(quantity(model.devices.count, "device")); "
            + "\(model.onlineState.rawValue)"
    }
}
