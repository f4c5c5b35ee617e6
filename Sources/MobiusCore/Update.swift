/// The pure function at the heart of a loop: given the current model and an event, say what happens next.
///
/// Contract: an update function is pure. It reads nothing but its arguments (no clock, no randomness, no
/// configuration held elsewhere) and does no I/O; anything impure is returned as an effect. The loop never
/// calls it re-entrantly and never concurrently.
public struct Update<Model, Event, Effect>: Sendable {
    @usableFromInline
    let body: @Sendable (Model, Event) -> Next<Model, Effect>

    /// Wraps an update closure.
    @inlinable
    public init(_ update: @escaping @Sendable (Model, Event) -> Next<Model, Effect>) {
        body = update
    }

    /// Answers `event` on `model`.
    @inlinable
    public func update(model: Model, event: Event) -> Next<Model, Effect> {
        body(model, event)
    }

    /// Answers `event` on `model`, so an `Update` can be called like the closure it wraps.
    @inlinable
    public func callAsFunction(model: Model, event: Event) -> Next<Model, Effect> {
        body(model, event)
    }
}

/// The function run when a controller starts or resumes a loop: from a model, the first model and effects.
public typealias Initiate<Model, Effect> = @Sendable (Model) -> First<Model, Effect>
