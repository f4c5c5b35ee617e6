/// An ``EventSource`` that delivers the elements of an `AsyncSequence` as events.
///
/// Each subscription iterates the sequence in its own `Task`; disposing the subscription cancels that task, and
/// nothing is delivered after `dispose()` returns. A sequence that throws ends the subscription; the error is
/// turned into an event by `onError` when one is given, because event sources never throw.
public final class AsyncSequenceEventSource<Events: AsyncSequence & Sendable>: EventSource
where Events.Element: Sendable {
    /// The events are the elements of the sequence.
    public typealias Event = Events.Element

    private let events: Events
    private let onError: (@Sendable (any Error) -> Event?)?

    /// A source over `events`; `onError` turns a thrown error into a last event (or `nil` for none).
    public init(_ events: Events, onError: (@Sendable (any Error) -> Event?)? = nil) {
        self.events = events
        self.onError = onError
    }

    /// Starts iterating the sequence; each element goes to `consumer` until the result is disposed.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        let disposed = AtomicFlag()
        let events = self.events
        let onError = self.onError
        let task = Task {
            do {
                for try await event in events {
                    guard !disposed.isSet, !Task.isCancelled else { return }
                    consumer(event)
                }
            } catch {
                guard !disposed.isSet, let event = onError?(error) else { return }
                consumer(event)
            }
        }
        return AnonymousDisposable {
            disposed.set()
            task.cancel()
        }
    }
}

extension AnyEventSource where Event: Sendable {
    /// An event source over the elements of `events`, iterated in a task per subscription.
    public convenience init<Events: AsyncSequence & Sendable>(
        _ events: Events, onError: (@Sendable (any Error) -> Event?)? = nil
    )
    where Events.Element == Event {
        self.init(AsyncSequenceEventSource(events, onError: onError))
    }
}
