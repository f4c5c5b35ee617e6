public import MobiusCore

/// A given-when-then test of an update function: from a model, after these events, this must hold.
///
/// ```swift
/// UpdateSpec(update)
///     .given(Model(count: 1))
///     .when(.increment, .increment)
///     .then(assertThatNext(hasModel(Model(count: 3)), hasNoEffects()))
/// ```
///
/// Events are applied in order; an event that produces no model keeps the previous one. `then` sees the final
/// model and the last event's `Next`; ``Then/thenEachStep(_:failFunction:file:line:)`` asserts every step instead.
public struct UpdateSpec<Model, Event, Effect> {
    /// An assertion on the outcome of the events.
    public typealias Assert = (Result) -> Void

    private let update: Update<Model, Event, Effect>

    /// A spec of `update`.
    public init(_ update: Update<Model, Event, Effect>) {
        self.update = update
    }

    /// A spec of an update closure.
    public init(_ update: @escaping @Sendable (Model, Event) -> Next<Model, Effect>) {
        self.update = Update(update)
    }

    /// Starts from `model`.
    public func given(_ model: Model) -> When {
        When(update: update, model: model)
    }

    /// The spec with its starting model; say which events happen next.
    public struct When {
        let update: Update<Model, Event, Effect>
        let model: Model

        /// Applies `event`, then each of `moreEvents`, in order.
        public func when(_ event: Event, _ moreEvents: Event...) -> Then {
            when([event] + moreEvents, file: #file, line: #line)
        }

        /// Applies `events` in order. With no events there is nothing to assert, and `then` reports that as a
        /// failure at this call.
        public func when(_ events: [Event], file: StaticString = #file, line: UInt = #line) -> Then {
            var model = self.model
            var steps: [Result] = []
            for event in events {
                let next = update.update(model: model, event: event)
                model = next.model ?? model
                steps.append(Result(model: model, lastNext: next))
            }
            return Then(steps: steps, file: file, line: line)
        }
    }

    /// The outcome of the events; assert on it.
    public struct Then {
        /// The outcome after each event, in order.
        public let steps: [Result]
        let file: StaticString
        let line: UInt

        /// Runs `assertion` on the final model and the last event's `Next`; with no events, reports a failure
        /// through `failFunction` instead, since nothing would be checked.
        public func then(_ assertion: Assert, failFunction: AssertionFailure = reportTestFailure) {
            guard let last = steps.last else {
                failFunction("UpdateSpec: no events were given to `when`, so there is nothing to assert", file, line)
                return
            }
            assertion(last)
        }

        /// Runs one assertion per event, each on the outcome of that event, so every intermediate model and
        /// effect list is checked. A different number of assertions than events is itself a failure.
        public func thenEachStep(
            _ assertions: Assert...,
            failFunction: AssertionFailure = reportTestFailure,
            file: StaticString = #file,
            line: UInt = #line
        ) {
            guard assertions.count == steps.count else {
                failFunction("\(steps.count) events were applied but \(assertions.count) steps asserted", file, line)
                return
            }
            for (assertion, step) in zip(assertions, steps) {
                assertion(step)
            }
        }
    }

    /// The model after an event and the `Next` that event produced.
    public struct Result {
        /// The model after the event (the previous one if the event produced none).
        public let model: Model
        /// What the update returned for the event.
        public let lastNext: Next<Model, Effect>
    }
}

/// An assertion on the `First` an initiate function returned.
public typealias AssertFirst<Model, Effect> = (First<Model, Effect>) -> Void

/// A when-then test of an initiate function: starting from this model, this must hold.
///
/// ```swift
/// InitSpec(initiate).when(Model()).then(assertThatFirst(hasModel(Model()), hasEffects([.enumerate])))
/// ```
public final class InitSpec<Model, Effect> {
    private let initiate: Initiate<Model, Effect>

    /// A spec of `initiate`.
    public init(_ initiate: @escaping Initiate<Model, Effect>) {
        self.initiate = initiate
    }

    /// Runs the initiate function on `model`.
    public func when(_ model: Model) -> Then {
        Then(first: initiate(model))
    }

    /// The outcome of initiation; assert on it.
    public struct Then {
        /// What the initiate function returned.
        public let first: First<Model, Effect>

        /// Runs `assertion` on the `First`.
        public func then(_ assertion: AssertFirst<Model, Effect>) {
            assertion(first)
        }
    }
}
