internal import CLinux
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The descriptors of running hooks (pipes and pidfds) in one epoll set of netdevd's own, watched by the
/// ``Poller`` for as long as the runner lives, and their deadlines, served by one ``PollerTimer``. Not a Dispatch
/// source per descriptor or a Dispatch timer per deadline: each costs wake-ups of libdispatch's manager thread
/// (see ``Poller``), and libdispatch's epoll bookkeeping on Linux can free a registration while its manager
/// thread still delivers an event for it when sources come and go at a high rate (swift-corelibs-libdispatch#949);
/// a burst starts thousands of hooks.
///
/// `@unchecked Sendable`: `watched`, `supervised`, `deadlines` and `armed` are read and written only on `queue`.
final class HookWatcher: @unchecked Sendable {
    private let queue: DispatchQueue
    private let epoll: Int32
    /// `epoll_wait`'s buffer, allocated once: a hook's exit and output are served on the loop's thread.
    private let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: 64)
    private var token: UInt64?
    private var timer: PollerTimer?
    private var watched: [Int32: HookProcess] = [:]
    /// Every supervised process's next deadline (``PollerTimer/now()``'s clock), served by one timer.
    private var deadlines: [ObjectIdentifier: (nanoseconds: UInt64, process: HookProcess)] = [:]
    /// When `timer` fires next; `nil` when it is disarmed. A deadline cleared early leaves it armed (it then finds
    /// nothing due and re-arms for the next), unless none is left.
    private var armed: UInt64?

    /// A watcher whose handlers run on `queue`; `nil` when the kernel refuses an epoll descriptor, a timerfd or
    /// the poller's thread.
    init?(queue: DispatchQueue) {
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return nil }
        self.queue = queue
        self.epoll = epoll
        // Weak: the poller and the timer outlive nothing of the watcher's; a deinit unregisters both.
        token = Poller.shared?.register(epoll, queue: queue) { [weak self] in self?.dispatchEvents() }
        timer = PollerTimer(queue: queue) { [weak self] in self?.deadlinesDue() }
        guard token != nil, timer != nil else { return nil }
    }

    deinit {
        if let token { Poller.shared?.unregister(token) }
        close(epoll)
        events.deallocate()
    }

    /// `process`'s next deadline is `nanoseconds` (``PollerTimer/now()``); it replaces the one it had. On queue.
    func setDeadline(of process: HookProcess, at nanoseconds: UInt64) {
        deadlines[ObjectIdentifier(process)] = (nanoseconds, process)
        if armed.map({ nanoseconds < $0 }) ?? true {
            timer?.schedule(atUptimeNanoseconds: nanoseconds)
            armed = nanoseconds
        }
    }

    /// Every process supervised, from its start until it has exited and nothing it left in its group is
    /// waiting for its SIGKILL: what ``killAll()`` kills.
    private var supervised: [ObjectIdentifier: HookProcess] = [:]

    /// `process` starts being supervised. On queue.
    func track(_ process: HookProcess) {
        supervised[ObjectIdentifier(process)] = process
    }

    /// `process` and its group are gone. On queue.
    func untrack(_ process: HookProcess) {
        supervised[ObjectIdentifier(process)] = nil
    }

    /// `true` when a supervised hook other than `other` whose main process still runs has pid `pid`.
    func isSupervisedLeader(_ pid: pid_t, other: HookProcess) -> Bool {
        supervised.values.contains { $0 !== other && $0.pid == pid && $0.isRunning }
    }

    /// SIGKILL to the process group of every hook still running and of every one whose leftovers are still
    /// within their grace. On queue, as netdevd exits: nothing of a hook outlives netdevd.
    func killAll() {
        for process in supervised.values { process.killGroup() }
        supervised = [:]
    }

    /// `process` has no deadline any more (it exited). On queue.
    func clearDeadline(of process: HookProcess) {
        guard deadlines.removeValue(forKey: ObjectIdentifier(process)) != nil, deadlines.isEmpty else { return }
        // None left: disarmed, so an idle netdevd is not woken by a timeout of a hook that finished long ago.
        timer?.disarm()
        armed = nil
    }

    private func deadlinesDue() {
        armed = nil
        let now = PollerTimer.now()
        for (key, entry) in deadlines where entry.nanoseconds <= now {
            deadlines[key] = nil
            entry.process.passDeadline()
        }
        if let next = deadlines.values.map(\.nanoseconds).min(), armed.map({ next < $0 }) ?? true {
            timer?.schedule(atUptimeNanoseconds: next)
            armed = next
        }
    }

    /// Watches `process`'s pipe and pidfd; returns those it could (epoll_ctl fails on ENOMEM or ENOSPC, and the
    /// process then checks its exit on a timer). On queue.
    func watch(_ process: HookProcess) -> [Int32] {
        var added: [Int32] = []
        for descriptor in [process.outputDescriptor, process.exitDescriptor] where descriptor >= 0 {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.fd = descriptor
            if epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event) == 0 {
                watched[descriptor] = process
                added.append(descriptor)
            }
        }
        return added
    }

    /// Stops watching `descriptor`, which the caller closes next. On queue. Closing it is what takes it out of
    /// the epoll set (no EPOLL_CTL_DEL: two system calls fewer per hook): the pipe's read end and the pidfd are
    /// close-on-exec, and the only processes netdevd starts are hooks, spawned on this queue (netdevd_spawn returns
    /// once its child has exec'd), so at the close no child holds a copy and it releases the last reference.
    /// Were another thread to spawn meanwhile, its child would hold copies until its exec: the set could then
    /// report the closed descriptor briefly, which finds no process here (or a new one under a reused number,
    /// whose read finds nothing and whose `waitpid` finds it running): harmless either way.
    func forget(_ descriptor: Int32) {
        watched.removeValue(forKey: descriptor)
    }

    /// One pass over what is ready, then back to the queue: the poller reports the epoll set again while
    /// anything in it is still ready, behind the loop's other work. (Looping here until nothing was ready let a
    /// hook that never stops writing hold the queue, which the loop shares, and its own timeout, forever.)
    private func dispatchEvents() {
        var count: Int32
        repeat {
            count = epoll_wait(epoll, events, 64, 0)
        } while count < 0 && errno == EINTR
        guard count > 0 else { return }
        for index in 0..<Int(count) {
            let descriptor = events[index].data.fd
            guard let process = watched[descriptor] else { continue }
            if descriptor == process.exitDescriptor {
                process.reap()
            } else {
                process.outputReadable()
            }
        }
    }
}
