/// Routes each effect to the one handler that takes it, and is the loop's effect handler via ``asConnectable``.
///
/// ```swift
/// let router = EffectRouter<Effect, Event>()
///     .routeEffects(withParameters: { if case .log(let line) = $0 { line } else { nil } }).to { print($0) }
///     .routeCase(\.load).to(loader)   // with MobiusCasePaths and a @CasePathable Effect
///     .routeEffects(equalTo: .exit).on(queue: .main).to { _ in exit(0) }
/// ```
///
/// Contract: each effect must be taken by exactly one route; an effect matched by none or by several is a
/// programming error reported to ``MobiusHooks``. Routes are tried in the order they were added. Disposing the
/// connection disconnects every handler: effects still running are cancelled (their ``Disposable`` disposed,
/// their callbacks ended, their tasks cancelled) and nothing they send afterwards reaches the loop.
public struct EffectRouter<Effect: Sendable, Event: Sendable>: Sendable {
    @usableFromInline let routes: [Route<Effect, Event>]

    /// A router with no routes.
    @inlinable
    public init() {
        routes = []
    }

    @inlinable
    init(routes: [Route<Effect, Event>]) {
        self.routes = routes
    }

    /// Routes the effects for which `extractParameters` returns parameters; the handler receives those.
    @inlinable
    public func routeEffects<EffectParameters>(
        withParameters extractParameters: @escaping @Sendable (Effect) -> EffectParameters?
    ) -> _PartialEffectRouter<Effect, EffectParameters, Event> {
        _PartialEffectRouter(routes: routes, extractParameters: extractParameters, hop: nil)
    }

    /// Connects every route's handler; the result accepts effects and sends the handlers' events to `consumer`.
    @inlinable
    public var asConnectable: AnyConnectable<Effect, Event> {
        let routes = self.routes
        return AnyConnectable { consumer in
            let disconnected = AtomicFlag()
            let output: Consumer<Event> = { event in
                if !disconnected.isSet {
                    consumer(event)
                }
            }
            let routing = RouterConnection(connections: routes.map { $0.connect(output) }, disconnected: disconnected)
            return Connection(
                acceptClosure: { effect in
                    guard !disconnected.isSet else { return }
                    Self.dispatch(effect, to: routing.connections)
                },
                disposeClosure: { routing.dispose() }
            )
        }
    }

    @inlinable
    func adding(_ route: Route<Effect, Event>) -> EffectRouter {
        EffectRouter(routes: routes + [route])
    }

    @inlinable
    static func dispatch(_ effect: Effect, to connections: [RouteConnection<Effect>]) {
        var handledBy: Int?
        for index in connections.indices {
            if handledBy == nil {
                if connections[index].handleIfMatches(effect) {
                    handledBy = index
                }
            } else if connections[index].matches(effect) {
                let count = connections.indices.filter { connections[$0].matches(effect) }.count
                MobiusHooks.errorHandler(
                    "Error: \(count) EffectHandlers could be found for effect: \(effect)", #file, #line)
            }
        }
        if handledBy == nil {
            MobiusHooks.errorHandler("Error: 0 EffectHandlers could be found for effect: \(effect)", #file, #line)
        }
    }
}

extension EffectRouter where Effect: Equatable {
    /// Routes the effects equal to `constant`; the handler receives the effect itself.
    @inlinable
    public func routeEffects(equalTo constant: Effect) -> _PartialEffectRouter<Effect, Effect, Event> {
        routeEffects(withParameters: { effect in effect == constant ? effect : nil })
    }

    /// Routes the effects equal to `enumCase`, a case without associated values; the handler receives `()`.
    @inlinable
    public func routeCase(_ enumCase: Effect) -> _PartialEffectRouter<Effect, Void, Event> {
        routeEffects(withParameters: { effect in effect == enumCase ? () : nil })
    }
}

/// The connected routes of one router connection. Disposed by the connection's `dispose()` or, when the connection
/// is released without it, by its deinit: effect handlers still running are cancelled either way, as in
/// Mobius.swift, and the routes are free to be connected again.
@usableFromInline
final class RouterConnection<Effect>: Sendable {
    @usableFromInline let connections: [RouteConnection<Effect>]
    /// Set by the first dispose, which alone disposes the routes; the routes' output checks it too.
    @usableFromInline let disconnected: AtomicFlag

    @usableFromInline
    init(connections: [RouteConnection<Effect>], disconnected: AtomicFlag) {
        self.connections = connections
        self.disconnected = disconnected
    }

    @usableFromInline
    func dispose() {
        guard disconnected.set() else { return }
        for connection in connections {
            connection.dispose()
        }
    }

    deinit {
        dispose()
    }

}
