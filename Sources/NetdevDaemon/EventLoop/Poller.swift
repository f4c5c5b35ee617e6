internal import CLinux
import Dispatch
import Locking

#if canImport(Glibc)
import Glibc
#endif

/// The descriptors that are busy under load (both monitors, the hooks' pipes and pidfds, the hooks' deadlines),
/// watched by one thread of netdevd's own, blocked in `epoll_wait`, which hands each readiness to the queue that
/// owns the descriptor.
///
/// Why not a Dispatch source: on Linux every event of one costs three thread wake-ups (libdispatch's manager
/// thread wakes from its epoll, wakes a worker for the handler, and is woken again to re-arm the descriptor once
/// the handler returns), and every timer armed or cancelled wakes the manager too. Here a readiness wakes this
/// thread and the owning queue's worker (none when the queue is already busy, as in a burst); the descriptor is
/// re-armed with `epoll_ctl` from the handler's thread, and timers are timerfds, armed with a system call.
///
/// Contract: a registered descriptor is reported with `EPOLLONESHOT`, so its handler never runs twice at once and
/// runs again only after it returned and the descriptor is readable; after ``unregister(_:)`` returns the handler
/// is not called again (a readiness already on its way to the queue is dropped there). The thread is started on
/// the first registration and lives as long as the process; an idle poller never wakes.
///
/// netdevd's main thread serves the poller itself instead (``claimMainThread()``, then ``runOnMainThread(until:)``):
/// it is then the thread of the loop's queue, the main queue, and runs that queue's work between readinesses (as
/// CoreFoundation's run loop does on Linux). A readiness for the main queue runs its handler at once on that
/// thread, and the events it reads are processed there too: a burst's kernel messages reach the loop without
/// waking any other thread.
///
/// A registration's handler may ask for a hold-off (the kernel's monitors do): after that run the descriptor is
/// armed again only once the hold-off has passed, so what arrives meanwhile is read in one run, with one wake-up
/// instead of one per message.
final class Poller: Sendable {
    /// The process's poller, started on first use; `nil` when the kernel refuses an epoll descriptor or a thread.
    static let shared: Poller? = Poller()

    /// A registration's handler and the queue it runs on, by token (the token, not the descriptor, is what
    /// epoll reports, so a descriptor number reused after ``unregister(_:)`` cannot reach an old handler).
    fileprivate struct Registration {
        let fileDescriptor: Int32
        let queue: DispatchQueue
        /// Runs when the descriptor is readable; returns the nanoseconds to wait before it is watched again (0:
        /// watched again at once).
        let handler: @Sendable () -> UInt64
    }

    fileprivate struct State {
        var registrations: [UInt64: Registration] = [:]
        var nextToken: UInt64 = 1
    }

    /// Who waits for readiness: nobody yet, a thread of the poller's own, or the main thread.
    private enum Driver {
        case none, ownThread, mainThread
    }

    private let epoll: Int32
    private let state = Locked(State())
    private let driver = Locked(Driver.none)

    private init?() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return nil }
    }

    /// Starts the poller's own thread unless it runs, or the main thread serves the poller; `false` when the
    /// thread cannot be started.
    private func startThreadIfNeeded() -> Bool {
        let start = driver.withLock { driver -> Bool in
            guard driver == .none else { return false }
            driver = .ownThread
            return true
        }
        guard start else { return true }
        let context = Unmanaged.passRetained(PollerThread(epoll: epoll, state: state)).toOpaque()
        var thread = pthread_t()
        guard
            pthread_create(
                &thread, nil,
                { context in
                    let poller = Unmanaged<PollerThread>.fromOpaque(context!).takeRetainedValue()
                    poller.run()
                    return nil
                }, context) == 0
        else {
            Unmanaged<PollerThread>.fromOpaque(context).release()
            driver.withLock { $0 = .none }
            return false
        }
        pthread_detach(thread)
        return true
    }

    /// Makes the calling thread, the main thread, the one that will serve the poller and the main queue; `false`
    /// when the poller's own thread already runs. Call it before anything registers, then
    /// ``runOnMainThread(until:)``; until then, work for the main queue waits.
    func claimMainThread() -> Bool {
        driver.withLock { driver -> Bool in
            guard driver == .none else { return false }
            driver = .mainThread
            return true
        }
    }

    /// Serves the poller and the main queue on the main thread until `done()` is true (checked after each
    /// wake-up: whoever makes it true wakes the thread with an empty block on the main queue). Handlers registered
    /// for `mainQueue` (the instance given to ``register(_:queue:handler:)``) run at once on this thread; others are
    /// handed to their queues. Returns `false` at once, serving nothing, when ``claimMainThread()`` was not called
    /// or the main queue's descriptor cannot be watched.
    func runOnMainThread(mainQueue: DispatchQueue, until done: () -> Bool) -> Bool {
        guard driver.withLock({ $0 == .mainThread }) else { return false }
        let mainQueueHandle = _dispatch_get_main_queue_handle_4CF()
        let token = register(mainQueueHandle, queue: mainQueue) { () -> Void in
            // Cleared first: work queued while the queue drains makes it readable again.
            var count: UInt64 = 0
            _ = read(mainQueueHandle, &count, 8)
            _dispatch_main_queue_callback_4CF(nil)
        }
        guard let token else { return false }
        defer { unregister(token) }
        Self.drainMainQueue()
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: 64)
        defer { events.deallocate() }
        // Registrations on the main queue holding off, and when each is armed again.
        var heldOff = HeldOff()
        while !done() {
            let count = epoll_wait(epoll, events, 64, heldOff.isEmpty ? -1 : heldOff.millisecondsToNext())
            if !heldOff.isEmpty { heldOff.armDue { Self.rearm($0, epoll: epoll, state: state) } }
            guard count > 0 else { continue }
            for index in 0..<Int(count) {
                let token = events[index].data.u64
                guard let registration = state.withLock({ $0.registrations[token] }) else { continue }
                if registration.queue === mainQueue {
                    let holdOff = registration.handler()
                    if holdOff > 0 {
                        heldOff.add(token, due: PollerTimer.now() + holdOff)
                    } else {
                        Self.rearm(token, epoll: epoll, state: state)
                    }
                } else {
                    Self.handOver(registration, token: token, epoll: epoll, state: state)
                }
            }
        }
        return true
    }

    /// Runs the work queued on the main queue so far, on the main thread, and what that work queued meanwhile
    /// ahead of a marker: for the stop, after ``runOnMainThread(until:)`` returned. (One drain call runs only the
    /// blocks queued when it starts.) Gives up after 1,000 passes, which no stop needs.
    static func drainMainQueue() {
        let reached = Locked(false)
        DispatchQueue.main.async { reached.withLock { $0 = true } }
        var passes = 0
        while !reached.withLock({ $0 }) && passes < 1_000 {
            _dispatch_main_queue_callback_4CF(nil)
            passes += 1
        }
    }

    /// Runs a readiness's handler on its registration's queue, then arms the descriptor again.
    fileprivate static func handOver(_ registration: Registration, token: UInt64, epoll: Int32, state: Locked<State>) {
        registration.queue.async {
            // Unregistered since: the descriptor may be closed or reused.
            guard state.withLock({ $0.registrations[token] != nil }) else { return }
            let holdOff = registration.handler()
            if holdOff > 0 {
                registration.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(holdOff))) {
                    Poller.rearm(token, epoll: epoll, state: state)
                }
            } else {
                Poller.rearm(token, epoll: epoll, state: state)
            }
        }
    }

    /// Calls `handler` on `queue` whenever `fileDescriptor` is readable; returns the token for ``unregister(_:)``,
    /// or `nil` when epoll refuses the descriptor (ENOMEM, ENOSPC).
    func register(
        _ fileDescriptor: Int32, queue: DispatchQueue, handler: @escaping @Sendable () -> Void
    ) -> UInt64? {
        registerHoldingOff(fileDescriptor, queue: queue) {
            handler()
            return 0
        }
    }

    /// Calls `handler` on `queue` whenever `fileDescriptor` is readable; after a call that returned more than 0 (it
    /// read all that was pending, and expects more soon) the descriptor is watched again only that many nanoseconds
    /// later. Returns the token for ``unregister(_:)``, or `nil` when epoll refuses the descriptor.
    func registerHoldingOff(
        _ fileDescriptor: Int32, queue: DispatchQueue, handler: @escaping @Sendable () -> UInt64
    ) -> UInt64? {
        guard startThreadIfNeeded() else { return nil }
        let token = state.withLock { state -> UInt64 in
            defer { state.nextToken += 1 }
            state.registrations[state.nextToken] = Registration(
                fileDescriptor: fileDescriptor, queue: queue, handler: handler)
            return state.nextToken
        }
        guard Self.control(epoll, EPOLL_CTL_ADD, fileDescriptor, token: token) else {
            // Released after the lock: the handler's captures may unregister something in their deinit.
            let removed = state.withLock { $0.registrations.removeValue(forKey: token) }
            _ = removed
            return nil
        }
        return token
    }

    /// Stops reporting the registration `token`; its descriptor may be closed once this returns. Call it on the
    /// registration's queue (or when its handler can no longer run): a handler already running is not waited for.
    func unregister(_ token: UInt64) {
        let removed = state.withLock { state -> Registration? in
            guard let registration = state.registrations.removeValue(forKey: token) else { return nil }
            _ = epoll_ctl(epoll, EPOLL_CTL_DEL, registration.fileDescriptor, nil)
            return registration
        }
        // Released here, not under the lock: the last reference to the handler's captures may go with it, and
        // their deinit may unregister too (a MemoryTrim's timer), which would take the lock again.
        _ = removed
    }

    /// Arms the descriptor again after its handler ran, unless it was unregistered meanwhile (under the lock, so a
    /// descriptor closed and reused after ``unregister(_:)`` is never armed with the old token).
    private static func rearm(_ token: UInt64, epoll: Int32, state: Locked<State>) {
        state.withLock { state in
            guard let registration = state.registrations[token] else { return }
            _ = control(epoll, EPOLL_CTL_MOD, registration.fileDescriptor, token: token)
        }
    }

    private static func control(_ epoll: Int32, _ operation: Int32, _ fileDescriptor: Int32, token: UInt64) -> Bool {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLONESHOT.rawValue
        event.data.u64 = token
        return epoll_ctl(epoll, operation, fileDescriptor, &event) == 0
    }

    /// The thread's side: waits, and hands each readiness to its queue.
    private final class PollerThread: Sendable {
        let epoll: Int32
        let state: Locked<State>

        init(epoll: Int32, state: Locked<State>) {
            self.epoll = epoll
            self.state = state
        }

        func run() {
            // A buffer of its own for the life of the thread, not an Array: in this loop, which never returns, an
            // Array's buffer was copied on every wake-up and the copy never freed (valgrind: 800 bytes per wake).
            let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: 64)
            while true {
                let count = epoll_wait(epoll, events, 64, -1)
                guard count > 0 else { continue }
                for index in 0..<Int(count) {
                    let token = events[index].data.u64
                    guard let registration = state.withLock({ $0.registrations[token] }) else { continue }
                    Poller.handOver(registration, token: token, epoll: epoll, state: state)
                }
            }
        }
    }
}

/// The main thread's registrations holding off: each token with the time (``PollerTimer/now()``) it is armed again.
/// A handful at most (one per monitor), so a plain array.
struct HeldOff {
    private var entries: [(token: UInt64, due: UInt64)] = []

    var isEmpty: Bool { entries.isEmpty }

    mutating func add(_ token: UInt64, due: UInt64) {
        entries.append((token, due))
    }

    /// `epoll_wait`'s timeout: the milliseconds to the earliest due time, rounded up; -1 (none) when empty.
    func millisecondsToNext() -> Int32 {
        guard let next = entries.lazy.map(\.due).min() else { return -1 }
        let now = PollerTimer.now()
        guard next > now else { return 0 }
        return Int32(min((next - now + 999_999) / 1_000_000, UInt64(Int32.max)))
    }

    /// Arms, with `arm`, every registration whose time has come, and forgets it.
    mutating func armDue(arm: (UInt64) -> Void) {
        let now = PollerTimer.now()
        entries.removeAll { entry in
            guard entry.due <= now else { return false }
            arm(entry.token)
            return true
        }
    }
}
