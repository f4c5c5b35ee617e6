public import Dispatch

/// A source of events from outside the loop: signals, timers, sockets, kernel monitors.
///
/// Contract: `subscribe` starts delivering events to `consumer`, from any thread, until the returned
/// ``Disposable`` is disposed; after that no event reaches `consumer`.
public protocol EventSource<Event>: AnyObject, Sendable {
    /// The type of event the source produces.
    associatedtype Event

    /// Starts delivering events to `consumer` until the result is disposed.
    func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable
}

/// A type-erased ``EventSource``, built from another source or from a `subscribe` closure.
public final class AnyEventSource<Event>: EventSource {
    private let subscribeClosure: @Sendable (@escaping Consumer<Event>) -> any Disposable

    /// Erases the type of `source`.
    public convenience init<Source: EventSource>(_ source: Source) where Source.Event == Event {
        if let erased = source as? AnyEventSource<Event> {
            self.init(erased.subscribeClosure)
        } else {
            self.init { consumer in source.subscribe(consumer: consumer) }
        }
    }

    /// An event source whose `subscribe` is `subscribe`.
    public init(_ subscribe: @escaping @Sendable (@escaping Consumer<Event>) -> any Disposable) {
        self.subscribeClosure = subscribe
    }

    /// Starts delivering events to `consumer` until the result is disposed.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        subscribeClosure(consumer)
    }
}

/// Merges several event sources into one: subscribing subscribes to each, disposing disposes each.
public struct CompositeEventSourceBuilder<Event>: Sendable {
    private let sources: [AnyEventSource<Event>]

    /// A builder with no sources yet.
    public init() {
        sources = []
    }

    private init(sources: [AnyEventSource<Event>]) {
        self.sources = sources
    }

    /// A builder that also includes `source`.
    public func addEventSource<Source: EventSource>(_ source: Source) -> CompositeEventSourceBuilder<Event>
    where Source.Event == Event {
        CompositeEventSourceBuilder(sources: sources + [AnyEventSource(source)])
    }

    /// One event source that subscribes to all the added sources, in the order they were added.
    public func build() -> AnyEventSource<Event> {
        let sources = self.sources
        if sources.count == 1 {
            return sources[0]
        }
        return AnyEventSource { consumer in
            CompositeDisposable(disposables: sources.map { $0.subscribe(consumer: consumer) })
        }
    }
}

extension CompositeEventSourceBuilder where Event: Sendable {
    /// A builder that also delivers the elements of `sequence`, iterated in a task per subscription.
    ///
    /// With `consumerQueue`, each element is delivered on that queue.
    public func addEventSource<Sequence: AsyncSequence & Sendable>(
        _ sequence: Sequence,
        receiveOn consumerQueue: DispatchQueue? = nil
    ) -> CompositeEventSourceBuilder<Event> where Sequence.Element == Event {
        let source = AsyncSequenceEventSource(sequence)
        guard let consumerQueue else {
            return addEventSource(source)
        }
        return addEventSource(
            AnyEventSource { consumer in
                let disposed = AtomicFlag()
                let subscription = source.subscribe { event in
                    consumerQueue.async {
                        if !disposed.isSet {
                            consumer(event)
                        }
                    }
                }
                return AnonymousDisposable {
                    disposed.set()
                    subscription.dispose()
                }
            }
        )
    }
}
