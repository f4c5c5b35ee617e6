#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif

/// State guarded by a `pthread_mutex_t`: the one lock type of the project, for every shared mutable value in
/// MobiusCore, the adapters and the daemon.
///
/// Why not `Synchronization.Mutex`: on Linux it takes contended locks through `FUTEX_LOCK_PI`, inside the kernel,
/// where ThreadSanitizer cannot see the acquisition, so every contended critical section is reported as a data
/// race. A pthread mutex is intercepted by ThreadSanitizer, costs the same uncontended (an atomic exchange), and
/// under contention spins in user space before sleeping instead of always entering the kernel.
///
/// `@unchecked Sendable`: `state` is only read or written inside `withLock`, between `pthread_mutex_lock` and
/// `pthread_mutex_unlock` on `mutex`.
public final class Locked<State>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var state: State

    /// A lock around `state`.
    public init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state. `body` must not call `withLock` on the same lock.
    @inlinable
    public func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
