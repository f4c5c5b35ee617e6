/// The input side of a connection made by a ``Connectable``: send it values, dispose it when done.
///
/// Contract: after `dispose()`, `accept(_:)` does nothing; the connectable owning the connection releases what it
/// holds exactly once. Both methods may be called from any thread.
public final class Connection<Value>: Disposable {
    @usableFromInline let acceptClosure: @Sendable (Value) -> Void
    @usableFromInline let disposer: OnceClosure
    @usableFromInline let disposed = AtomicFlag()

    /// A connection that forwards accepted values to `acceptClosure` and runs `disposeClosure` once on dispose.
    public init(
        acceptClosure: @escaping @Sendable (Value) -> Void,
        disposeClosure: @escaping @Sendable () -> Void
    ) {
        self.acceptClosure = acceptClosure
        self.disposer = OnceClosure(disposeClosure)
    }

    /// Sends `value` through the connection, unless it was disposed.
    @inlinable
    public func accept(_ value: Value) {
        guard !disposed.isSet else { return }
        acceptClosure(value)
    }

    /// Closes the connection. Idempotent.
    public func dispose() {
        disposed.set()
        disposer.run()
    }
}
