import Locking
public import MobiusCore

/// A given-when-then test of an `EffectRouter`: given this router, when these effects are routed, these events come
/// back.
///
/// ```swift
/// EffectRouterSpec.given(router)
///     .when(.load(id: 3))
///     .then(expectEvents(.loaded(id: 3)))
/// ```
///
/// `then` connects the router, hands it the effects in order, checks the events its handlers sent meanwhile against
/// every predicate, and disposes the connection. Only events sent before the last effect's handler returns are
/// seen: a route that hops to a queue or runs its work in a `Task` answers after the check.
public struct EffectRouterSpec<Effect: Sendable, Event: Sendable> {
    private let router: EffectRouter<Effect, Event>

    /// A spec of `router`.
    public static func given(_ router: EffectRouter<Effect, Event>) -> Self {
        Self(router: router)
    }

    /// Routes `effects`, in order.
    public func when(_ effects: [Effect]) -> When {
        When(router: router, effects: effects)
    }

    /// Routes `effects`, in order.
    public func when(_ effects: Effect...) -> When {
        When(router: router, effects: effects)
    }

    /// The spec with its effects; say what must hold for the events.
    public struct When {
        let router: EffectRouter<Effect, Event>
        let effects: [Effect]

        /// Routes the effects and checks the events sent back against every predicate, reporting each failure
        /// through `failFunction`.
        public func then(_ predicates: Predicate<[Event]>..., failFunction: AssertionFailure = reportTestFailure) {
            let received = ReceivedEvents<Event>()
            let connection = router.asConnectable.connect { event in received.append(event) }
            defer { connection.dispose() }
            for effect in effects {
                connection.accept(effect)
            }
            evaluate(received.all, predicates, failFunction: failFunction)
        }
    }
}

/// Passes when every one of `events` is among the events sent back (others may be there too, in any order). Fails
/// with "Expected [received] to contain: [events]".
public func expectEvents<Event: Equatable>(
    _ events: Event...,
    file: StaticString = #file,
    line: UInt = #line
) -> Predicate<[Event]> {
    { received in
        if events.allSatisfy(received.contains) { return .success }
        return .failure(message: "Expected \(received) to contain: \(events)", file: file, line: line)
    }
}

/// Runs `sideEffects` while the router is still connected, to check what its handlers did besides sending events;
/// it always passes, so report failures from within `sideEffects` (with `#expect` or `XCTAssert`).
public func expectSideEffects<Event>(
    file: StaticString = #file,
    line: UInt = #line,
    _ sideEffects: @escaping () -> Void
) -> Predicate<[Event]> {
    { _ in
        sideEffects()
        return .success
    }
}

/// The events a router's handlers sent, from whichever thread they sent them.
private final class ReceivedEvents<Event: Sendable>: Sendable {
    private let events = Locked<[Event]>([])

    func append(_ event: Event) {
        events.withLock { $0.append(event) }
    }

    var all: [Event] {
        events.withLock { $0 }
    }
}
