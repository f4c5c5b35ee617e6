/// A running Mobius loop: it owns the current model, runs every event through the update function, publishes
/// new models to observers and hands effects to the effect handler.
///
/// Make one with `Mobius.loop(update:effectHandler:)…start(from:)`, or let a ``MobiusController`` make it.
///
/// Contracts:
/// - Update is never re-entered and never runs concurrently. An event sent while an event is being processed
///   (from the update's effects, an effect handler, an observer or another thread) is queued and processed
///   afterwards, in the order sent (FIFO). The reference implementation processes queued work in an unspecified
///   order; a FIFO order is part of this loop's contract.
/// - For each event, the new model (if any) reaches every observer before any of that event's effects is
///   dispatched.
/// - Events that event sources or effect handlers emit while the loop is being built are held and processed
///   only after the first model has been published and the first effects dispatched.
/// - `dispose()` is idempotent; afterwards events from event sources and effect handlers are dropped, and
///   calling ``dispatchEvent(_:file:line:)`` is a programming error reported to ``MobiusHooks``.
///
/// The loop processes events on whichever thread submits one while it is idle; ``MobiusController`` confines all
/// of them to one serial queue.
public final class MobiusLoop<Model: Sendable, Event: Sendable, Effect: Sendable>: Disposable {
    @usableFromInline let core: LoopCore<Model, Event, Effect>
    @usableFromInline let resources: OnceValue<[any Disposable]>
    /// Where `dispatchEvent` sends events when a transformer or the controller's hop wraps the loop's consumer;
    /// `nil` means straight to the core.
    @usableFromInline let wrappedConsumer: Consumer<Event>?
    /// Like `wrappedConsumer` but without the controller's hop: processing happens on the calling thread.
    @usableFromInline let transformedConsumer: Consumer<Event>?

    @inlinable
    init(
        model: Model,
        effects: [Effect],
        update: Update<Model, Event, Effect>,
        effectHandler: AnyConnectable<Effect, Event>,
        eventSource: AnyConnectable<Model, Event>?,
        logger: AnyMobiusLogger<Model, Event, Effect>?,
        eventConsumerTransformer: ConsumerTransformer<Event>?,
        hop: ConsumerTransformer<Event>? = nil,
        initialObserver: Consumer<Model>? = nil
    ) {
        let core = LoopCore(model: model, update: update, logger: logger)
        // Weak: the core holds the effect handler's connection, which holds this consumer.
        let direct: Consumer<Event> = { [weak core] event in core?.submit(event) }
        let transformed = eventConsumerTransformer?(direct)
        let wrapped = hop?(transformed ?? direct) ?? transformed
        let consumer = wrapped ?? direct
        self.core = core
        self.transformedConsumer = transformed
        self.wrappedConsumer = wrapped

        let effectConnection = effectHandler.connect(consumer)
        core.attach(effects: effectConnection)
        var resources: [any Disposable] = []
        if let eventSource {
            let connection = eventSource.connect(consumer)
            resources.append(connection)
            resources.append(core.addInitialObserver { model in connection.accept(model) })
        }
        if let initialObserver {
            resources.append(core.addInitialObserver(initialObserver))
        }
        resources.append(effectConnection)
        self.resources = OnceValue(resources)
        core.release(effects: effects)
    }

    deinit {
        dispose()
    }

    /// The most recently published model.
    public var latestModel: Model {
        core.latestModel
    }

    /// Sends `event` to the loop. Processed at once when the loop is idle, otherwise after the events before it.
    ///
    /// Dispatching to a disposed loop is a programming error reported to ``MobiusHooks``.
    @inlinable
    public func dispatchEvent(_ event: Event, file: StaticString = #file, line: UInt = #line) {
        if core.isDisposed {
            MobiusHooks.errorHandler("\(Self.self): cannot accept events when disposed", file, line)
        }
        unguardedDispatchEvent(event)
    }

    /// Sends `event` to the loop without checking whether it was disposed; a disposed loop drops it.
    /// For wrappers that deliver events asynchronously and may lose the race with `dispose()`.
    @inlinable
    public func unguardedDispatchEvent(_ event: Event) {
        if let wrappedConsumer {
            wrappedConsumer(event)
        } else {
            core.submit(event)
        }
    }

    /// Processes `event` on the calling thread (through the event consumer transformer, if any), bypassing the
    /// controller's hop: the controller calls this on its loop queue.
    @inlinable
    func dispatchLocally(_ event: Event) {
        if let transformedConsumer {
            transformedConsumer(event)
        } else {
            core.submit(event)
        }
    }

    /// Adds an observer of models; it receives the current model at once, then every new one. (Called while the
    /// loop is processing, for instance from another observer, it receives the current model right after the
    /// event in progress.)
    ///
    /// Observers are called on the thread processing events, one call at a time. Dispose the result to remove the observer.
    /// Adding an observer to a disposed loop is a programming error reported to ``MobiusHooks``.
    @discardableResult
    public func addObserver(
        _ consumer: @escaping Consumer<Model>,
        file: StaticString = #file,
        line: UInt = #line
    ) -> any Disposable {
        if core.isDisposed {
            MobiusHooks.errorHandler("\(Self.self): cannot add an observer when disposed", file, line)
        }
        return core.addObserver(consumer)
    }

    /// Stops the loop: event sources are unsubscribed, the effect handler disconnected, observers removed and
    /// queued events dropped. Idempotent.
    public func dispose() {
        guard core.dispose() else { return }
        for resource in resources.take() ?? [] {
            resource.dispose()
        }
    }
}

extension MobiusLoop: CustomDebugStringConvertible {
    /// `MobiusLoop<M, E, F>{ model }`, or `disposed MobiusLoop<M, E, F>!`.
    public var debugDescription: String {
        if core.isDisposed {
            return "disposed \(Self.self)!"
        }
        return "\(Self.self){ \(String(reflecting: latestModel)) }"
    }
}
