public import Locking

/// The engine of a ``MobiusLoop``: runs update on one event at a time, publishes models, dispatches effects.
///
/// Threading: any thread may submit work (an event, or a new observer to greet with the current model). The first
/// submitter that finds the loop idle becomes the *drainer*: it does its work and then everything queued
/// meanwhile, in FIFO order, before going idle again. Others only enqueue. So update never runs re-entrantly or
/// concurrently, events sent from update's effects or from observers are processed after the current one, an
/// observer is never called from two threads at once, and no thread waits for another to finish an update.
///
///     submit(e) ──lock──▶ idle?  ── yes ─▶ drain: update → publish model → dispatch effects → next queued …
///                           │
///                           └── no ──▶ append to `pending` (the drainer will get to it)
///
/// Disposal is decided under the same lock: once `dispose()` has returned, no submitted work starts, no observer
/// is called and no effect is dispatched; an update already running finishes.
///
/// The hot path is `@inlinable` so that it is specialised for the client's Model, Event and Effect: unspecialised
/// generic code spends most of its time looking up generic metadata.
///
/// `@unchecked Sendable`: the shared state is in `state` (a `Locked`). `currentModel` and `effects` are touched
/// only by the drainer, and the `processing` flag, set and cleared under the lock, admits one drainer at a time.
@usableFromInline
final class LoopCore<Model: Sendable, Event: Sendable, Effect: Sendable>: @unchecked Sendable {
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var model: Model
        @usableFromInline var pending = RingBuffer<Work>()
        @usableFromInline var processing = true
        @usableFromInline var observers: [Observer] = []

        @usableFromInline
        init(model: Model) {
            self.model = model
        }
    }

    /// What the drainer does: process an event, or add an observer and give it the current model.
    @usableFromInline
    enum Work: Sendable {
        case event(Event)
        case greet(Observer)
    }

    @usableFromInline
    struct Observer: Sendable {
        @usableFromInline let consumer: Consumer<Model>
        @usableFromInline let removed = AtomicFlag()

        @usableFromInline
        init(consumer: @escaping Consumer<Model>) {
            self.consumer = consumer
        }
    }

    @usableFromInline let state: Locked<State>
    @usableFromInline let disposed = AtomicFlag()
    @usableFromInline let update: Update<Model, Event, Effect>
    @usableFromInline let logger: AnyMobiusLogger<Model, Event, Effect>?
    @usableFromInline var currentModel: Model
    @usableFromInline var effects: Connection<Effect>?

    /// A core that holds every submitted event until `release()`; the loop is built in that time.
    @usableFromInline
    init(model: Model, update: Update<Model, Event, Effect>, logger: AnyMobiusLogger<Model, Event, Effect>?) {
        state = Locked(State(model: model))
        currentModel = model
        self.update = update
        self.logger = logger
    }

    @inlinable
    var latestModel: Model {
        state.withLock { $0.model }
    }

    @inlinable
    var isDisposed: Bool {
        disposed.isSet
    }

    /// Sets where effects go. Called once, while the core still holds events.
    @usableFromInline
    func attach(effects connection: Connection<Effect>) {
        effects = connection
    }

    /// Publishes the first model, dispatches the first effects, then processes the work held so far.
    /// Called once, on the thread building the loop, after `attach(effects:)`.
    @usableFromInline
    func release(effects initialEffects: [Effect]) {
        publish(currentModel)
        dispatch(initialEffects)
        drainQueued()
    }

    /// Processes `event` now if the loop is idle, otherwise queues it; drops it once disposed.
    @inlinable
    func submit(_ event: Event) {
        if becomeDrainerOrEnqueue(.event(event)) {
            process(event)
            drainQueued()
        }
    }

    /// Adds an observer, which first receives the current model: at once when the loop is idle, otherwise right
    /// after the work in progress, and then every new model. Returns the disposable that removes it.
    @usableFromInline
    func addObserver(_ consumer: @escaping Consumer<Model>) -> any Disposable {
        let observer = Observer(consumer: consumer)
        if becomeDrainerOrEnqueue(.greet(observer)) {
            greet(observer)
            drainQueued()
        }
        return removal(of: observer)
    }

    /// Adds an observer while the loop is being built; it receives the first model when `release` publishes it.
    @usableFromInline
    func addInitialObserver(_ consumer: @escaping Consumer<Model>) -> any Disposable {
        let observer = Observer(consumer: consumer)
        state.withLock { $0.observers.append(observer) }
        return removal(of: observer)
    }

    /// Stops processing: queued work is dropped, observers forgotten. Returns `false` if already disposed.
    @usableFromInline
    func dispose() -> Bool {
        guard disposed.set() else { return false }
        state.withLock { state in
            state.pending.removeAll()
            state.observers = []
        }
        return true
    }

    /// `true` when the caller must do `work` itself (the loop was idle); `false` when it was queued or dropped.
    @inlinable
    func becomeDrainerOrEnqueue(_ work: Work) -> Bool {
        state.withLock { state in
            if disposed.isSet {
                return false
            }
            if state.processing {
                state.pending.append(work)
                return false
            }
            state.processing = true
            return true
        }
    }

    @inlinable
    func drainQueued() {
        while let work = nextQueued() {
            switch work {
            case .event(let event):
                process(event)
            case .greet(let observer):
                greet(observer)
            }
        }
    }

    @inlinable
    func nextQueued() -> Work? {
        state.withLock { state in
            if !disposed.isSet, let work = state.pending.popFirst() {
                return work
            }
            state.processing = false
            return nil
        }
    }

    @inlinable
    func process(_ event: Event) {
        let model = currentModel
        logger?.willUpdate(model: model, event: event)
        let next = update.update(model: model, event: event)
        logger?.didUpdate(model: model, event: event, next: next)
        if let newModel = next.model {
            currentModel = newModel
            publish(newModel)
        }
        if !next.effects.isEmpty {
            dispatch(next.effects)
        }
    }

    @inlinable
    func publish(_ model: Model) {
        let observers = state.withLock { state in
            state.model = model
            return state.observers
        }
        for observer in observers where !observer.removed.isSet && !disposed.isSet {
            observer.consumer(model)
        }
    }

    @inlinable
    func dispatch(_ effects: [Effect]) {
        guard let connection = self.effects else { return }
        for effect in effects where !disposed.isSet {
            connection.accept(effect)
        }
    }

    @usableFromInline
    func greet(_ observer: Observer) {
        let model = state.withLock { state -> Model? in
            guard !observer.removed.isSet, !disposed.isSet else { return nil }
            state.observers.append(observer)
            return state.model
        }
        if let model {
            observer.consumer(model)
        }
    }

    @usableFromInline
    func removal(of observer: Observer) -> any Disposable {
        AnonymousDisposable { [weak self] in
            observer.removed.set()
            self?.state.withLock { state in
                state.observers.removeAll { $0.removed.isSet }
            }
        }
    }
}
