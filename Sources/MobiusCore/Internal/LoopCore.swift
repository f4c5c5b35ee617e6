import Synchronization

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
/// `@unchecked Sendable`: the shared state is in `state` (a Mutex). `currentModel` and `effects` are touched only
/// by the drainer, and the `processing` flag, set and cleared under the mutex, admits one drainer at a time.
final class LoopCore<Model: Sendable, Event: Sendable, Effect: Sendable>: @unchecked Sendable {
    private struct State: Sendable {
        var model: Model
        var pending = RingBuffer<Event>()
        var processing = true
        var disposed = false
        var observers: [Observer] = []
        var nextObserverID: UInt64 = 0
    }

    private struct Observer: Sendable {
        let id: UInt64
        let consumer: Consumer<Model>
    }

    /// What became of a submitted event.
    enum Submission {
        case accepted
        case refusedBecauseDisposed
    }

    private let state: Mutex<State>
    private let update: Update<Model, Event, Effect>
    private let logger: AnyMobiusLogger<Model, Event, Effect>?
    private var currentModel: Model
    private var effects: Connection<Effect>?

    /// A core that holds every submitted event until `release()`; the loop is built in that time.
    init(model: Model, update: Update<Model, Event, Effect>, logger: AnyMobiusLogger<Model, Event, Effect>?) {
        state = Mutex(State(model: model))
        currentModel = model
        self.update = update
        self.logger = logger
    }

    var latestModel: Model {
        state.withLock { $0.model }
    }

    var isDisposed: Bool {
        state.withLock { $0.disposed }
    }

    /// Sets where effects go. Called once, while the core still holds events.
    func attach(effects connection: Connection<Effect>) {
        effects = connection
    }

    /// Publishes the first model, dispatches the first effects, then processes the events held so far.
    /// Called once, on the thread building the loop, after `attach(effects:)`.
    func release(effects initialEffects: [Effect]) {
        publish(currentModel)
        for effect in initialEffects {
            effects?.accept(effect)
        }
        drainQueued()
    }

    @discardableResult
    func submit(_ event: Event) -> Submission {
        let becameDrainer = state.withLock { state -> Bool? in
            if state.disposed {
                return nil
            }
            if state.processing {
                state.pending.append(event)
                return false
            }
            state.processing = true
            return true
        }
        switch becameDrainer {
        case nil:
            return .refusedBecauseDisposed
        case false?:
            return .accepted
        case true?:
            process(event)
            drainQueued()
            return .accepted
        }
    }

    /// Adds an observer; unless `deliveringCurrentModel` is `false` it receives the current model at once.
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
    func dispose() -> Bool {
        state.withLock { state in
            guard !state.disposed else { return false }
            state.disposed = true
            state.pending.removeAll()
            state.observers = []
            return true
        }
    }

    private func drainQueued() {
        while let event = nextQueued() {
            process(event)
        }
    }

    private func nextQueued() -> Event? {
        state.withLock { state in
            if !state.disposed, let event = state.pending.popFirst() {
                return event
            }
            state.processing = false
            return nil
        }
    }

    private func process(_ event: Event) {
        let model = currentModel
        logger?.willUpdate(model: model, event: event)
        let next = update.update(model: model, event: event)
        logger?.didUpdate(model: model, event: event, next: next)
        if let newModel = next.model {
            currentModel = newModel
            publish(newModel)
        }
        if let effects {
            for effect in next.effects {
                effects.accept(effect)
            }
        }
    }

    private func publish(_ model: Model) {
        let observers = state.withLock { state in
            state.model = model
            return state.observers
        }
        for observer in observers {
            observer.consumer(model)
        }
    }
}
