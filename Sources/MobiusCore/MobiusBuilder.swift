public import Dispatch

extension Mobius {
    /// Starts describing a loop with an ``Update`` value and an effect handler (usually an ``EffectRouter``'s
    /// `asConnectable`). Finish with ``Builder/start(from:effects:)`` or ``Builder/makeController(from:initiate:loopQueue:viewQueue:)``.
    public static func loop<Model, Event, Effect, EffectHandler: Connectable>(
        update: Update<Model, Event, Effect>,
        effectHandler: EffectHandler
    ) -> Builder<Model, Event, Effect> where EffectHandler.Input == Effect, EffectHandler.Output == Event {
        Builder(update: update, effectHandler: AnyConnectable(effectHandler))
    }

    /// Starts describing a loop with an update closure and an effect handler.
    public static func loop<Model, Event, Effect, EffectHandler: Connectable>(
        update: @escaping @Sendable (Model, Event) -> Next<Model, Effect>,
        effectHandler: EffectHandler
    ) -> Builder<Model, Event, Effect> where EffectHandler.Input == Effect, EffectHandler.Output == Event {
        loop(update: Update(update), effectHandler: effectHandler)
    }

    /// The description of a loop: its update function, effect handler, event sources, logger and event consumer
    /// transformer. A value: every `with…` method returns a new builder, and one builder can start many loops.
    public struct Builder<Model: Sendable, Event: Sendable, Effect: Sendable>: Sendable {
        @usableFromInline let update: Update<Model, Event, Effect>
        @usableFromInline let effectHandler: AnyConnectable<Effect, Event>
        @usableFromInline var eventSource: AnyConnectable<Model, Event>?
        @usableFromInline var logger: AnyMobiusLogger<Model, Event, Effect>?
        @usableFromInline var eventConsumerTransformer: ConsumerTransformer<Event>?

        @usableFromInline
        init(update: Update<Model, Event, Effect>, effectHandler: AnyConnectable<Effect, Event>) {
            self.update = update
            self.effectHandler = effectHandler
        }

        /// Sets the event source (replacing any earlier one); it is subscribed when a loop starts and disposed with
        /// it. Combine several sources with ``CompositeEventSourceBuilder``.
        public func withEventSource<Source: EventSource>(_ eventSource: Source) -> Builder
        where Source.Event == Event {
            var copy = self
            copy.eventSource = AnyConnectable { consumer in
                let subscription = eventSource.subscribe(consumer: consumer)
                return Connection(acceptClosure: { _ in }, disposeClosure: { subscription.dispose() })
            }
            return copy
        }

        /// Sets the event source (replacing any earlier one) to a connectable that also receives the loop's
        /// models: the first model when the loop starts, then every new one, before observers get it.
        public func withEventSource<Source: Connectable>(_ eventSource: Source) -> Builder
        where Source.Input == Model, Source.Output == Event {
            var copy = self
            copy.eventSource = AnyConnectable(eventSource)
            return copy
        }

        /// Sets the logger told about every initiation and update.
        public func withLogger<Logger: MobiusLogger>(_ logger: Logger) -> Builder
        where Logger.Model == Model, Logger.Event == Event, Logger.Effect == Effect {
            var copy = self
            copy.logger = AnyMobiusLogger(logger)
            return copy
        }

        /// Wraps the consumer through which ``MobiusLoop/dispatchEvent(_:file:line:)``, event sources and effect
        /// handlers send events to the loop. Transformers compose: a later one wraps what the earlier ones made.
        public func withEventConsumerTransformer(_ transformer: @escaping ConsumerTransformer<Event>) -> Builder {
            var copy = self
            if let earlier = eventConsumerTransformer {
                copy.eventConsumerTransformer = { consumer in transformer(earlier(consumer)) }
            } else {
                copy.eventConsumerTransformer = transformer
            }
            return copy
        }

        /// Starts a loop from `initialModel`, dispatching `effects` once that model is published.
        ///
        /// This does not run an ``Initiate`` function; a ``MobiusController`` does that on every start.
        @inlinable
        public func start(from initialModel: Model, effects: [Effect] = []) -> MobiusLoop<Model, Event, Effect> {
            start(from: initialModel, effects: effects, hop: nil)
        }

        @inlinable
        func start(
            from initialModel: Model,
            effects: [Effect],
            hop: ConsumerTransformer<Event>?,
            observer: Consumer<Model>? = nil
        )
            -> MobiusLoop<Model, Event, Effect>
        {
            MobiusLoop(
                model: initialModel,
                effects: effects,
                update: update,
                effectHandler: effectHandler,
                eventSource: eventSource,
                logger: logger,
                eventConsumerTransformer: eventConsumerTransformer,
                hop: hop,
                initialObserver: observer
            )
        }

        /// Starts a loop after running `initiate` (if any) on `model`, telling the logger about it. Events from
        /// event sources and effect handlers go through `hop` (the controller's way onto its queue); `observer`
        /// gets the first model before any of the first effects runs.
        @inlinable
        func start(
            initiating model: Model,
            with initiate: Initiate<Model, Effect>?,
            hop: @escaping ConsumerTransformer<Event>,
            observer: @escaping Consumer<Model>
        )
            -> MobiusLoop<Model, Event, Effect>
        {
            let first: First<Model, Effect>
            if let initiate {
                logger?.willInitiate(model: model)
                first = initiate(model)
                logger?.didInitiate(model: model, first: first)
            } else {
                first = First(model: model)
            }
            return start(from: first.model, effects: first.effects, hop: hop, observer: observer)
        }

        /// A controller whose loop runs on a global queue of quality of service `qos` and whose views get models
        /// on the main queue.
        public func makeController(
            from initialModel: Model,
            initiate: Initiate<Model, Effect>? = nil,
            qos: DispatchQoS.QoSClass = .userInitiated
        ) -> MobiusController<Model, Event, Effect> {
            makeController(from: initialModel, initiate: initiate, loopQueue: .global(qos: qos))
        }

        /// A controller that runs loops of this builder on `loopQueue` (through a serial queue of its own that
        /// targets it), starting from `initialModel` and resuming from the last model after each stop;
        /// `initiate` runs on every start. Views get models on `viewQueue`.
        public func makeController(
            from initialModel: Model,
            initiate: Initiate<Model, Effect>? = nil,
            loopQueue: DispatchQueue,
            viewQueue: DispatchQueue = .main
        ) -> MobiusController<Model, Event, Effect> {
            MobiusController(
                builder: self,
                initialModel: initialModel,
                initiate: initiate,
                loopQueue: loopQueue,
                viewQueue: viewQueue
            )
        }
    }
}
