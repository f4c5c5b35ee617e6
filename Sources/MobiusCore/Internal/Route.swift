/// One route of an ``EffectRouter``: which effects it takes and where they go, before it is connected.
struct Route<Effect: Sendable, Event: Sendable>: Sendable {
    /// Opens the route's handler, sending its events to `output`.
    let connect: @Sendable (_ output: @escaping Consumer<Event>) -> RouteConnection<Effect>
}

/// A connected route: tests effects against its parameter extractor and hands matching ones to its handler.
struct RouteConnection<Effect>: Sendable {
    /// `true` when this route takes `effect`; nothing is handled.
    let matches: @Sendable (Effect) -> Bool
    /// Handles `effect` and returns `true` when this route takes it; returns `false` otherwise.
    let handleIfMatches: @Sendable (Effect) -> Bool
    /// Disconnects the handler; effects in progress are cancelled.
    let dispose: @Sendable () -> Void
}

/// A route target once connected: a function taking extracted parameters, and how to disconnect it.
struct ConnectedTarget<Parameters>: Sendable {
    let handle: @Sendable (Parameters) -> Void
    let dispose: @Sendable () -> Void

    init(handle: @escaping @Sendable (Parameters) -> Void, dispose: @escaping @Sendable () -> Void = {}) {
        self.handle = handle
        self.dispose = dispose
    }
}

/// A route target before it is connected to the loop's event consumer.
typealias RouteTarget<Parameters, Event> =
    @Sendable (_ output: @escaping Consumer<Event>) -> ConnectedTarget<
        Parameters
    >
