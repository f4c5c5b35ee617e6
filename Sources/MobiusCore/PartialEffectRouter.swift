public import Dispatch
public import Synchronization

/// A route being described: which effects it takes (and the parameters extracted from them) and, optionally,
/// the queue its handler runs on. Finish it with one of the `to…` methods, which return the router with the
/// route added.
///
/// Targets, simplest first:
/// - `.to { parameters in … }`: fire and forget;
/// - `.toEvent { parameters in event }`: answer with at most one event;
/// - `.to { parameters async -> Event? in … }`: run in a `Task`, cancelled when the loop stops;
/// - `.to { parameters, callback in … return disposable }` or `.to(effectHandler)`: work with a clear end, reported
///   through ``EffectCallback``;
/// - `.to(connectable)`: a long-lived connection that receives every matching effect.
public struct _PartialEffectRouter<Effect: Sendable, EffectParameters, Event: Sendable>: Sendable {
    @usableFromInline let routes: [Route<Effect, Event>]
    @usableFromInline let extractParameters: @Sendable (Effect) -> EffectParameters?
    @usableFromInline let hop: Hop<EffectParameters>?

    @inlinable
    init(
        routes: [Route<Effect, Event>],
        extractParameters: @escaping @Sendable (Effect) -> EffectParameters?,
        hop: Hop<EffectParameters>?
    ) {
        self.routes = routes
        self.extractParameters = extractParameters
        self.hop = hop
    }

    /// Runs this route's handler on `queue` (asynchronously) instead of the thread dispatching the effect.
    @inlinable
    public func on(queue: DispatchQueue) -> _PartialEffectRouter where EffectParameters: Sendable {
        _PartialEffectRouter(routes: routes, extractParameters: extractParameters) { handle, disconnected in
            { parameters in
                queue.async {
                    if !disconnected.isSet {
                        handle(parameters)
                    }
                }
            }
        }
    }

    /// Sends matching effects' parameters to a connection of `connectable`, opened when the loop starts.
    @inlinable
    public func to<C: Connectable>(_ connectable: C) -> EffectRouter<Effect, Event>
    where C.Input == EffectParameters, C.Output == Event {
        finish { output in
            let connection = connectable.connect(output)
            return ConnectedTarget(handle: { connection.accept($0) }, dispose: { connection.dispose() })
        }
    }

    /// Hands each matching effect to `effectHandler` with a fresh ``EffectCallback``.
    @inlinable
    public func to<Handler: EffectHandler>(_ effectHandler: Handler) -> EffectRouter<Effect, Event>
    where Handler.EffectParameters == EffectParameters, Handler.Event == Event {
        to { parameters, callback in effectHandler.handle(parameters, callback) }
    }

    /// Calls `handle` for each matching effect with a fresh ``EffectCallback``; the returned disposable cancels
    /// the work if the loop stops before the callback is ended.
    @inlinable
    public func to(
        _ handle: @escaping @Sendable (EffectParameters, EffectCallback<Event>) -> any Disposable
    ) -> EffectRouter<Effect, Event> {
        finish { output in
            let running = Tracker<RunningHandler<Event>>()
            return ConnectedTarget(
                handle: { parameters in
                    guard let id = running.reserve() else { return }
                    let callback = EffectCallback<Event>(onSend: output, onEnd: { running.finish(id) })
                    let disposable = handle(parameters, callback)
                    if !running.register(id, RunningHandler(callback: callback, disposable: disposable)) {
                        if !callback.ended {
                            callback.end()
                            disposable.dispose()
                        }
                    }
                },
                dispose: {
                    for handler in running.close() {
                        handler.callback.end()
                        handler.disposable.dispose()
                    }
                }
            )
        }
    }

    /// Calls `fireAndForget` with each matching effect's parameters.
    @inlinable
    public func to(_ fireAndForget: @escaping @Sendable (EffectParameters) -> Void) -> EffectRouter<Effect, Event> {
        finish { _ in ConnectedTarget(handle: fireAndForget) }
    }

    /// Calls `eventFunction` with each matching effect's parameters and sends the event it returns, if any.
    @inlinable
    public func toEvent(
        _ eventFunction: @escaping @Sendable (EffectParameters) -> Event?
    ) -> EffectRouter<Effect, Event> {
        finish { output in
            ConnectedTarget(handle: { parameters in
                if let event = eventFunction(parameters) {
                    output(event)
                }
            })
        }
    }

    @inlinable
    func finish(_ target: @escaping RouteTarget<EffectParameters, Event>) -> EffectRouter<Effect, Event> {
        let extract = extractParameters
        let hop = self.hop
        // One connection at a time per route, as in Mobius.swift: the route's handler (a connectable, the effect
        // handlers it runs) belongs to one loop.
        let slot = ConnectionSlot()
        let route = Route<Effect, Event> { output in
            guard slot.take() else {
                MobiusHooks.errorHandler(
                    "Connection limit exceeded: a route of EffectRouter<\(Effect.self), \(Event.self)> is already "
                        + "connected. Unable to connect more than once: dispose of the first connection first",
                    #file, #line)
            }
            let connected = target(output)
            let disconnected = AtomicFlag()
            let handle = hop?(connected.handle, disconnected) ?? connected.handle
            return RouteConnection(
                matches: { effect in extract(effect) != nil },
                handleIfMatches: { effect in
                    guard let parameters = extract(effect) else { return false }
                    handle(parameters)
                    return true
                },
                dispose: {
                    disconnected.set()
                    connected.dispose()
                    slot.release()
                }
            )
        }
        return EffectRouter(routes: routes).adding(route)
    }
}

/// Whether a route is connected: taken by a connection, released when that connection is disposed.
@usableFromInline
final class ConnectionSlot: Sendable {
    @usableFromInline let taken = Atomic<Bool>(false)

    @usableFromInline
    init() {}

    /// Takes the slot; `false` when a connection holds it already.
    @inlinable
    func take() -> Bool {
        !taken.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Frees the slot for the next connection.
    @inlinable
    func release() {
        taken.store(false, ordering: .releasing)
    }
}

/// Wraps a route's handler so that it runs elsewhere (on a dispatch queue), unless the route was disconnected
/// (the flag) by the time it gets there.
@usableFromInline
typealias Hop<Parameters> =
    @Sendable (@escaping @Sendable (Parameters) -> Void, AtomicFlag) ->
    @Sendable (
        Parameters
    ) -> Void

/// What a callback-style route must cancel when the loop disconnects it.
@usableFromInline
struct RunningHandler<Event>: Sendable {
    @usableFromInline let callback: EffectCallback<Event>
    @usableFromInline let disposable: any Disposable

    @inlinable
    init(callback: EffectCallback<Event>, disposable: any Disposable) {
        self.callback = callback
        self.disposable = disposable
    }
}
