/// What a loop starts from: the first model and the effects to dispatch once it is published.
///
/// It has no description of its own, as in Mobius.swift, so logs and tests read it the same way:
/// `First<Int, String>(model: 0, effects: ["load"])` in an interpolation.
///
/// An ``Initiate`` function returns a `First` every time a ``MobiusController`` starts or resumes, so a loop can
/// re-establish whatever its effects maintain (subscriptions, timers) from any valid model.
public struct First<Model, Effect> {
    /// The model the loop starts with; it is published before any effect runs.
    public let model: Model

    /// The effects to dispatch once the first model is published, in order.
    public let effects: [Effect]

    /// A starting point: `model`, then `effects`.
    @inlinable
    public init(model: Model, effects: [Effect] = []) {
        self.model = model
        self.effects = effects
    }

    /// `true` when the loop starts with at least one effect.
    @inlinable
    public var hasEffects: Bool {
        !effects.isEmpty
    }
}

extension First: Sendable where Model: Sendable, Effect: Sendable {}

extension First: Equatable where Model: Equatable, Effect: Equatable {}
