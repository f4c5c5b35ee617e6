/// Handles one kind of effect that has a clear end: it does its work, may send events, and ends its callback.
///
/// Contract: `handle` is called once per effect with that effect's parameters. It must not throw (failures become
/// events), must eventually call `callback.end()`, and returns a ``Disposable`` that cancels the work. When the
/// loop stops before the handler ends, the disposable is disposed and the callback ended, so later sends are
/// dropped. Route effects to a handler with an ``EffectRouter``.
public protocol EffectHandler<EffectParameters, Event>: Sendable {
    /// The parameters the router extracts from an effect for this handler.
    associatedtype EffectParameters
    /// The events the handler can send.
    associatedtype Event

    /// Starts handling one effect; report through `callback`, cancel through the result.
    func handle(_ parameters: EffectParameters, _ callback: EffectCallback<Event>) -> any Disposable
}

/// A type-erased ``EffectHandler``, or one made from a closure.
public struct AnyEffectHandler<EffectParameters, Event>: EffectHandler {
    private let handleClosure: @Sendable (EffectParameters, EffectCallback<Event>) -> any Disposable

    /// A handler whose `handle` is `handle`.
    public init(handle: @escaping @Sendable (EffectParameters, EffectCallback<Event>) -> any Disposable) {
        handleClosure = handle
    }

    /// Erases the type of `handler`.
    public init<Handler: EffectHandler>(handler: Handler)
    where Handler.EffectParameters == EffectParameters, Handler.Event == Event {
        handleClosure = { parameters, callback in handler.handle(parameters, callback) }
    }

    /// Forwards to the wrapped closure.
    public func handle(_ parameters: EffectParameters, _ callback: EffectCallback<Event>) -> any Disposable {
        handleClosure(parameters, callback)
    }
}
