/// One route of an ``EffectRouter``: which effects it takes and where they go, before it is connected.
@usableFromInline
struct Route<Effect: Sendable, Event: Sendable>: Sendable {
    /// Opens the route's handler, sending its events to `output`.
    @usableFromInline let connect: @Sendable (_ output: @escaping Consumer<Event>) -> RouteConnection<Effect>

    @inlinable
    init(connect: @escaping @Sendable (_ output: @escaping Consumer<Event>) -> RouteConnection<Effect>) {
        self.connect = connect
    }
}

/// A connected route: tests effects against its parameter extractor and hands matching ones to its handler.
@usableFromInline
struct RouteConnection<Effect>: Sendable {
    /// `true` when this route takes `effect`; nothing is handled.
    @usableFromInline let matches: @Sendable (Effect) -> Bool
    /// Handles `effect` and returns `true` when this route takes it; returns `false` otherwise.
    @usableFromInline let handleIfMatches: @Sendable (Effect) -> Bool
    /// Disconnects the handler; effects in progress are cancelled.
    @usableFromInline let dispose: @Sendable () -> Void

    @inlinable
    init(
        matches: @escaping @Sendable (Effect) -> Bool,
        handleIfMatches: @escaping @Sendable (Effect) -> Bool,
        dispose: @escaping @Sendable () -> Void
    ) {
        self.matches = matches
        self.handleIfMatches = handleIfMatches
        self.dispose = dispose
    }
}

/// A route target once connected: a function taking extracted parameters, and how to disconnect it.
@usableFromInline
struct ConnectedTarget<Parameters>: Sendable {
    @usableFromInline let handle: @Sendable (Parameters) -> Void
    @usableFromInline let dispose: @Sendable () -> Void

    @inlinable
    init(handle: @escaping @Sendable (Parameters) -> Void, dispose: @escaping @Sendable () -> Void = {}) {
        self.handle = handle
        self.dispose = dispose
    }
}

/// A route target before it is connected to the loop's event consumer.
@usableFromInline
typealias RouteTarget<Parameters, Event> =
    @Sendable (_ output: @escaping Consumer<Event>) -> ConnectedTarget<
        Parameters
    >
