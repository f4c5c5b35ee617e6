/// The engine of a ``MobiusLoop``: runs update on one event at a time, publishes models, dispatches effects.
///
/// Threading: any thread may submit an event. The first submitter that finds the loop idle becomes the *drainer*
/// and processes its event and then every event queued meanwhile, in FIFO order, before going idle again. Others
/// only enqueue. So update never runs re-entrantly or concurrently, events sent from update's effects or from
/// observers are processed after the current one, and no thread ever waits for another to finish an update.
///
///     submit(e) ──lock──▶ idle?  ── yes ─▶ drain: update → publish model → dispatch effects → next queued …
///                           │
///                           └── no ──▶ append to `pending` (the drainer will get to it)
///
/// The hot path is `@inlinable` so that it is specialised for the client's Model, Event and Effect: unspecialised
/// generic code spends most of its time looking up generic metadata.
///
/// `@unchecked Sendable`: the shared state is in `state` (a Mutex). `currentModel` and `effects` are touched only
/// by the drainer, and the `processing` flag, set and cleared under the mutex, admits one drainer at a time.
@usableFromInline
final class LoopCore<Model: Sendable, Event: Sendable, Effect: Sendable>: @unchecked Sendable {
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var model: Model
        @usableFromInline var pending = RingBuffer<Event>()
        @usableFromInline var processing = true
        @usableFromInline var observers: [Observer] = []
        @usableFromInline var nextObserverID: UInt64 = 0

        @usableFromInline
        init(model: Model) {
            self.model = model
        }
    }

    @usableFromInline
    struct Observer: Sendable {
        @usableFromInline let id: UInt64
        @usableFromInline let consumer: Consumer<Model>

        @usableFromInline
        init(id: UInt64, consumer: @escaping Consumer<Model>) {
            self.id = id
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

    /// Publishes the first model, dispatches the first effects, then processes the events held so far.
    /// Called once, on the thread building the loop, after `attach(effects:)`.
    @usableFromInline
    func release(effects initialEffects: [Effect]) {
        publish(currentModel)
        for effect in initialEffects {
            effects?.accept(effect)
        }
        drainQueued()
    }

    /// Processes `event` now if the loop is idle, otherwise queues it; drops it once disposed.
    @inlinable
    func submit(_ event: Event) {
        guard !disposed.isSet else { return }
        let becameDrainer = state.withLock { state -> Bool in
            if state.processing {
                state.pending.append(event)
                return false
            }
            state.processing = true
            return true
        }
        if becameDrainer {
            process(event)
            drainQueued()
        }
    }

    /// Adds an observer; unless `deliveringCurrentModel` is `false` it receives the current model at once.
    @usableFromInline
    func addObserver(deliveringCurrentModel: Bool = true, _ consumer: @escaping Consumer<Model>) -> any Disposable {
        let (id, model) = state.withLock { state in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.observers.append(Observer(id: id, consumer: consumer))
            return (id, state.model)
        }
        if deliveringCurrentModel {
            consumer(model)
        }
        return AnonymousDisposable { [weak self] in
            self?.state.withLock { state in
                state.observers.removeAll { $0.id == id }
            }
        }
    }

    /// Stops processing: queued events are dropped, observers forgotten. Returns `false` if already disposed.
    @usableFromInline
    func dispose() -> Bool {
        guard disposed.set() else { return false }
        state.withLock { state in
            state.pending.removeAll()
            state.observers = []
        }
        return true
    }

    @inlinable
    func drainQueued() {
        while let event = nextQueued() {
            process(event)
        }
    }

    @inlinable
    func nextQueued() -> Event? {
        let disposed = self.disposed.isSet
        return state.withLock { state in
            if !disposed, let event = state.pending.popFirst() {
                return event
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
        if let effects, !next.effects.isEmpty {
            for effect in next.effects {
                effects.accept(effect)
            }
        }
    }

    @inlinable
    func publish(_ model: Model) {
        let observers = state.withLock { state in
            state.model = model
            return state.observers
        }
        for observer in observers {
            observer.consumer(model)
        }
    }
}
