public import Locking

/// The work in progress of one route: what to cancel when the route is disconnected.
///
/// Work can finish before it is registered (a handler that ends its callback synchronously, a task that completes
/// at once), so `finish` before `register` is remembered and the late registration is ignored.
@usableFromInline
final class Tracker<Work: Sendable>: Sendable {
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var nextID: UInt64 = 0
        @usableFromInline var running: [UInt64: Work] = [:]
        @usableFromInline var finishedEarly: Set<UInt64> = []
        @usableFromInline var closed = false

        @usableFromInline
        init() {}
    }

    @usableFromInline let state = Locked(State())

    @usableFromInline
    init() {}

    /// A fresh identifier for work about to start, or `nil` once the route is disconnected.
    @inlinable
    func reserve() -> UInt64? {
        state.withLock { state in
            guard !state.closed else { return nil }
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// Records running work; returns `false` when it already finished or the route is disconnected.
    @inlinable
    func register(_ id: UInt64, _ work: Work) -> Bool {
        state.withLock { state in
            if state.finishedEarly.remove(id) != nil || state.closed {
                return false
            }
            state.running[id] = work
            return true
        }
    }

    /// Forgets finished work.
    @inlinable
    func finish(_ id: UInt64) {
        state.withLock { state in
            if state.running.removeValue(forKey: id) == nil, !state.closed {
                state.finishedEarly.insert(id)
            }
        }
    }

    /// Refuses new work and returns the work still running, to cancel.
    @inlinable
    func close() -> [Work] {
        state.withLock { state in
            state.closed = true
            defer { state.running = [:] }
            return Array(state.running.values)
        }
    }
}
