public import Locking

/// A closure that runs at most once, whichever thread asks first.
@usableFromInline
final class OnceClosure: Sendable {
    @usableFromInline let closure: OnceValue<@Sendable () -> Void>

    @usableFromInline
    init(_ closure: @escaping @Sendable () -> Void) {
        self.closure = OnceValue(closure)
    }

    @usableFromInline
    func run() {
        closure.take()?()
    }
}

/// A value that can be taken out exactly once; later takers get `nil`.
@usableFromInline
final class OnceValue<Value: Sendable>: Sendable {
    @usableFromInline let storage: Locked<Value?>

    @usableFromInline
    init(_ value: Value) {
        storage = Locked(value)
    }

    @usableFromInline
    func take() -> Value? {
        storage.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
