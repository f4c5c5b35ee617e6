import Foundation

/// A value behind an `NSLock` (a pthread mutex). Not `Synchronization.Mutex`: on Linux a contended Mutex is taken
/// inside the kernel (FUTEX_LOCK_PI), out of ThreadSanitizer's sight, so every contended critical section would
/// be reported as a race.
///
/// `@unchecked Sendable`: `value` is read and written only inside `withLock`, while `lock` is held.
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
