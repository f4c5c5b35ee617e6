// Re-exported, so that `@CasePathable` and `routeCase(\.caseName)` work with `import MobiusCasePaths` alone.
@_exported public import CasePaths
@_exported public import MobiusCore

/// Routing by enum case with swift-case-paths: `routeCase(\.load)` on a `@CasePathable` effect.
///
/// A module of its own because swift-case-paths brings Foundation (through its IssueReporting dependency), and
/// MobiusCore must not: a daemon that routes with ``EffectRouter/routeEffects(withParameters:)`` links neither.
extension EffectRouter {
    /// Routes the effects of one enum case, named by its case key path (`\.load`); the handler receives the
    /// case's associated value.
    @inlinable
    public func routeCase<EffectParameters>(
        _ enumCase: CaseKeyPath<Effect, EffectParameters>
    ) -> _PartialEffectRouter<Effect, EffectParameters, Event> where Effect: CasePathable {
        let casePath = UncheckedCaseKeyPath(enumCase)
        return routeEffects(withParameters: { effect in effect[case: casePath.keyPath] })
    }

    /// Routes the effects of one enum case, named by a case path (`/Effect.load` or `AnyCasePath`); the handler
    /// receives the case's associated value.
    @inlinable
    public func routeCase<EffectParameters>(
        _ enumCase: AnyCasePath<Effect, EffectParameters>
    ) -> _PartialEffectRouter<Effect, EffectParameters, Event> {
        routeEffects(withParameters: { effect in enumCase.extract(from: effect) })
    }
}

/// Case key paths are immutable values that Swift does not yet mark `Sendable`; this wrapper lets a router
/// (which crosses threads) hold one. `@unchecked Sendable`: the key path is never mutated after creation.
@usableFromInline
struct UncheckedCaseKeyPath<Root, Value>: @unchecked Sendable {
    @usableFromInline let keyPath: CaseKeyPath<Root, Value>

    @inlinable
    init(_ keyPath: CaseKeyPath<Root, Value>) {
        self.keyPath = keyPath
    }
}
