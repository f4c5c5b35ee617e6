/// Observes a loop's work: each initiation and each update, with its inputs and result.
///
/// Calls happen on the thread that processes the loop's events, in order, and never concurrently for one loop.
/// A logger must not dispatch events or block.
public protocol MobiusLogger<Model, Event, Effect>: Sendable {
    /// The loop's model type.
    associatedtype Model
    /// The loop's event type.
    associatedtype Event
    /// The loop's effect type.
    associatedtype Effect

    /// Called before ``Initiate`` runs on `model`.
    func willInitiate(model: Model)
    /// Called after ``Initiate`` turned `model` into `first`.
    func didInitiate(model: Model, first: First<Model, Effect>)
    /// Called before the update function receives `event` on `model`.
    func willUpdate(model: Model, event: Event)
    /// Called after the update function answered `event` on `model` with `next`.
    func didUpdate(model: Model, event: Event, next: Next<Model, Effect>)
}

extension MobiusLogger {
    /// Does nothing unless the logger implements it.
    public func willInitiate(model: Model) {}
    /// Does nothing unless the logger implements it.
    public func didInitiate(model: Model, first: First<Model, Effect>) {}
    /// Does nothing unless the logger implements it.
    public func willUpdate(model: Model, event: Event) {}
    /// Does nothing unless the logger implements it.
    public func didUpdate(model: Model, event: Event, next: Next<Model, Effect>) {}
}

/// A logger that does nothing; the default.
public struct NoopLogger<Model, Event, Effect>: MobiusLogger {
    /// A logger that logs nothing.
    public init() {}
    /// Does nothing.
    public func willInitiate(model: Model) {}
    /// Does nothing.
    public func didInitiate(model: Model, first: First<Model, Effect>) {}
    /// Does nothing.
    public func willUpdate(model: Model, event: Event) {}
    /// Does nothing.
    public func didUpdate(model: Model, event: Event, next: Next<Model, Effect>) {}
}

/// A type-erased ``MobiusLogger``.
public final class AnyMobiusLogger<Model, Event, Effect>: MobiusLogger {
    private let base: any MobiusLogger<Model, Event, Effect>

    /// Erases the type of `base`.
    public init<Logger: MobiusLogger>(_ base: Logger)
    where Logger.Model == Model, Logger.Event == Event, Logger.Effect == Effect {
        self.base = base
    }

    /// Forwards to the wrapped logger.
    public func willInitiate(model: Model) { base.willInitiate(model: model) }
    /// Forwards to the wrapped logger.
    public func didInitiate(model: Model, first: First<Model, Effect>) { base.didInitiate(model: model, first: first) }
    /// Forwards to the wrapped logger.
    public func willUpdate(model: Model, event: Event) { base.willUpdate(model: model, event: event) }
    /// Forwards to the wrapped logger.
    public func didUpdate(model: Model, event: Event, next: Next<Model, Effect>) {
        base.didUpdate(model: model, event: event, next: next)
    }
}
