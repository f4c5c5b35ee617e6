/// Something that holds a resource (a subscription, a connection, a running effect) until it is disposed.
///
/// Contract: `dispose()` may be called from any thread, and calling it more than once has the effect of calling it
/// once. After `dispose()` returns, the resource sends nothing more to whoever it was connected to.
public protocol Disposable: AnyObject, Sendable {
    /// Releases the resource. Idempotent and thread-safe.
    func dispose()
}

/// A ``Disposable`` that runs a closure on its first `dispose()` and never again.
public final class AnonymousDisposable: Disposable {
    private let disposer: OnceClosure

    /// Wraps `disposer`, which runs at most once, on the thread of the first `dispose()` call.
    public init(disposer: @escaping @Sendable () -> Void) {
        self.disposer = OnceClosure(disposer)
    }

    /// Wraps another disposable, so it is disposed at most once through this one.
    public convenience init<Base: Disposable>(_ base: Base) {
        self.init(disposer: { base.dispose() })
    }

    /// Runs the disposer if no earlier call did.
    public func dispose() {
        disposer.run()
    }
}

/// A ``Disposable`` that disposes several others, in the order given, once.
public final class CompositeDisposable: Disposable {
    private let disposables: OnceValue<[any Disposable]>

    /// Groups `disposables`; disposing the group disposes each of them once, in order.
    public init(disposables: [any Disposable]) {
        self.disposables = OnceValue(disposables)
    }

    /// Disposes every member if no earlier call did.
    public func dispose() {
        for disposable in disposables.take() ?? [] {
            disposable.dispose()
        }
    }
}

/// A ``Disposable`` with nothing to release, for handlers that finish before they return.
public final class EmptyDisposable: Disposable {
    /// An empty disposable.
    public init() {}

    /// Does nothing.
    public func dispose() {}
}

extension Task {
    /// A ``Disposable`` that cancels this task.
    public var asDisposable: some Disposable {
        AnonymousDisposable { self.cancel() }
    }
}
