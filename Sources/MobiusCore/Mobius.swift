/// A function that receives values, such as events for a loop or models for an observer.
///
/// Consumers are `@Sendable`: the loop may call them from whichever thread processes its events.
public typealias Consumer<Value> = @Sendable (Value) -> Void

/// A function that wraps a consumer, for instance to hop onto another queue before the value is consumed.
public typealias ConsumerTransformer<Value> = @Sendable (@escaping Consumer<Value>) -> Consumer<Value>

/// The namespace of Mobius: `Mobius.loop(update:effectHandler:)` is where every loop begins.
///
/// ```swift
/// let loop = Mobius.loop(update: update, effectHandler: router.asConnectable)
///     .withEventSource(signals)
///     .start(from: Model())
/// ```
public enum Mobius {}
