/// Something that, given a consumer of its outputs, opens a ``Connection`` that accepts its inputs.
///
/// Effect handlers (`Input` = effect, `Output` = event) and views (`Input` = model, `Output` = event) are
/// connectables. Contract: after the returned connection is disposed, the connectable sends nothing more to that
/// `consumer`. A connectable says whether it takes several connections at once, each independent (a view does), or
/// one at a time (an ``EffectRouter``'s, as in Mobius.swift: a second `connect` while the first connection is open
/// is a misuse reported to ``MobiusHooks``).
public protocol Connectable<Input, Output>: Sendable {
    /// What the connection accepts.
    associatedtype Input
    /// What the connectable sends to the consumer.
    associatedtype Output

    /// Opens a connection whose outputs go to `consumer`.
    func connect(_ consumer: @escaping Consumer<Output>) -> Connection<Input>
}

/// A type-erased ``Connectable``, built from another connectable or from a `connect` closure.
public struct AnyConnectable<Input, Output>: Connectable {
    private let connectClosure: @Sendable (@escaping Consumer<Output>) -> Connection<Input>

    /// Erases the type of `connectable`.
    public init<C: Connectable>(_ connectable: C) where C.Input == Input, C.Output == Output {
        if let erased = connectable as? AnyConnectable<Input, Output> {
            self = erased
        } else {
            self.connectClosure = { consumer in connectable.connect(consumer) }
        }
    }

    /// A connectable whose `connect` is `connect`.
    public init(_ connect: @escaping @Sendable (@escaping Consumer<Output>) -> Connection<Input>) {
        self.connectClosure = connect
    }

    /// Opens a connection whose outputs go to `consumer`.
    public func connect(_ consumer: @escaping Consumer<Output>) -> Connection<Input> {
        connectClosure(consumer)
    }
}
