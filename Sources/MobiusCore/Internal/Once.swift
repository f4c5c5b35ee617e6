import Synchronization

/// A closure that runs at most once, whichever thread asks first.
final class OnceClosure: Sendable {
    private let closure: OnceValue<@Sendable () -> Void>

    init(_ closure: @escaping @Sendable () -> Void) {
        self.closure = OnceValue(closure)
    }

    func run() {
        closure.take()?()
    }
}

/// A value that can be taken out exactly once; later takers get `nil`.
final class OnceValue<Value: Sendable>: Sendable {
    private let storage: Mutex<Value?>

    init(_ value: Value) {
        storage = Mutex(value)
    }

    func take() -> Value? {
        storage.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
