/// The result of one call to an update function: an optional new model and the effects to run.
///
/// `Next` is how an update function answers an event. It says two independent things:
/// - whether the model changed (`model` is `nil` when it did not, and then no model is published), and
/// - which effects the loop must hand to its effect handler, in order.
///
/// Build it with the factory methods, which read like the domain:
/// `.next(model)`, `.next(model, effects: [...])`, `.dispatchEffects([...])` and `.noChange`.
public struct Next<Model, Effect> {
    /// The new model, or `nil` when the model did not change.
    public let model: Model?

    /// The effects to dispatch, in the order the update function listed them.
    public let effects: [Effect]

    @usableFromInline
    init(model: Model?, effects: [Effect]) {
        self.model = model
        self.effects = effects
    }

    /// A new model and, optionally, effects to dispatch after the model is published.
    @inlinable
    public static func next(_ model: Model, effects: [Effect] = []) -> Next<Model, Effect> {
        Next(model: model, effects: effects)
    }

    /// No new model, only effects to dispatch.
    @inlinable
    public static func dispatchEffects(_ effects: [Effect]) -> Next<Model, Effect> {
        Next(model: nil, effects: effects)
    }

    /// Nothing happens: no model is published and no effect is dispatched.
    @inlinable
    public static var noChange: Next<Model, Effect> {
        Next(model: nil, effects: [])
    }

    /// `true` when the update produced at least one effect.
    @inlinable
    public var hasEffects: Bool {
        !effects.isEmpty
    }
}

extension Next: Sendable where Model: Sendable, Effect: Sendable {}

extension Next: Equatable where Model: Equatable, Effect: Equatable {}

extension Next: CustomDebugStringConvertible {
    /// A description such as `(3, ["save"])` or `(nil, [])`, Mobius.swift's form, for test failures and logs.
    public var debugDescription: String {
        let model = self.model.map { String(reflecting: $0) } ?? "nil"
        return "(\(model), \(String(reflecting: effects)))"
    }
}
