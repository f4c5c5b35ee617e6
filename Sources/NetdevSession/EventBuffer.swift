import HashTreeCollections

/// The events held while a snapshot is read, in the order they arrived, to be replayed on it.
///
/// The loop keeps the previous model while the session makes the next one, so the held events are always shared
/// when one more arrives. In an array that append copied every event held (a burst of n events during a start or a
/// resync cost n² / 2 copies); here the events sit in a persistent tree keyed by arrival, and an append copies only
/// the few nodes on the path to the new entry. It encodes as the array of events.
public struct EventBuffer: Sendable, Equatable, Codable, Sequence, ExpressibleByArrayLiteral {
    private var events: TreeDictionary<Int, Event>

    /// No events.
    public init() {
        events = [:]
    }

    /// These events, in this order.
    public init(arrayLiteral elements: Event...) {
        self.init()
        for event in elements { append(event) }
    }

    /// How many events are held.
    public var count: Int { events.count }

    /// No event is held.
    public var isEmpty: Bool { events.isEmpty }

    /// Holds `event` after the others.
    public mutating func append(_ event: Event) {
        events[events.count] = event
    }

    /// The events in the order they arrived.
    public func makeIterator() -> some IteratorProtocol<Event> {
        let events = events
        return (0..<events.count).lazy.map { events[$0]! }.makeIterator()
    }

    /// Decodes the array of events.
    public init(from decoder: any Decoder) throws {
        self.init()
        for event in try [Event](from: decoder) { append(event) }
    }

    /// Encodes the array of events.
    public func encode(to encoder: any Encoder) throws {
        try Array(self).encode(to: encoder)
    }
}
