internal import CLinux
import Dispatch
import NetdevSession

#if canImport(Glibc)
import Glibc
#endif

/// One hook process, supervised without a thread of its own: its exit (a pidfd) and its output (the read end of
/// its pipe) are watched by the ``HookWatcher``'s epoll descriptor, and its deadlines are entries of the watcher's
/// one timer, all on the runner's serial queue.
///
///     posix_spawn ─▶ pidfd readable ──▶ waitpid ─┐
///                    pipe readable ───▶ tail     ├─▶ done(outcome); descriptors closed
///                    timeout deadline ─▶ SIGTERM ┘
///                                        └▶ grace deadline ▶ SIGKILL
///
/// Where pidfd_open is refused (a kernel before 5.3, a seccomp filter), the exit is checked every 20 ms instead.
///
/// `@unchecked Sendable`: every property is read and written only on `queue`, where all methods run.
final class HookProcess: @unchecked Sendable {
    private let name: String
    private let pid: pid_t
    private let started: UInt64
    private let queue: DispatchQueue
    private var tail: OutputTail
    /// The pipe's read end, -1 once closed.
    private(set) var outputDescriptor: Int32
    /// The pidfd, -1 when there is none or it is closed.
    private(set) var exitDescriptor: Int32 = -1
    private var exitPoll: (any DispatchSourceTimer)?
    /// The watcher, from ``supervise(by:timeoutMilliseconds:killGrace:done:)`` on.
    private var watcher: HookWatcher?
    /// What happens at the process's next deadline (the timeout's SIGTERM or the grace's SIGKILL).
    fileprivate var deadlinePassed: (() -> Void)?
    private var signalled = false
    private var timedOut = false
    private var done: ((HookOutcome) -> Void)?

    private init(name: String, pid: pid_t, outputDescriptor: Int32, tailBytes: Int, queue: DispatchQueue) {
        self.name = name
        self.pid = pid
        self.outputDescriptor = outputDescriptor
        self.tail = OutputTail(limit: tailBytes)
        self.queue = queue
        self.started = PollerTimer.now()
    }

    /// Starts `hook` with `arguments` and `environment` in a process group of its own, standard input from
    /// /dev/null and standard output and error into a pipe. On queue only. Returns the reason when it cannot.
    static func spawn(
        _ hook: HookFile,
        arguments: [String],
        environment: [String],
        tailBytes: Int,
        queue: DispatchQueue
    ) -> Result<HookProcess, SpawnFailure> {
        var ends: [Int32] = [0, 0]
        // Close-on-exec from creation: another hook spawned meanwhile must not inherit this pipe.
        guard pipe2(&ends, O_CLOEXEC) == 0 else { return .failure(SpawnFailure(call: "pipe2", errno: errno)) }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var argv = arguments.map { strdup($0) } + [nil]
        var envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, hook.path, &actions, &attributes, &argv, &envp)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            return .failure(SpawnFailure(call: nil, errno: spawned))
        }
        return .success(
            HookProcess(name: hook.name, pid: pid, outputDescriptor: ends[0], tailBytes: tailBytes, queue: queue))
    }

    /// Watches the process until it exits, then calls `done` once, on queue. `timeoutMilliseconds` 0 means no
    /// limit; past it the group gets SIGTERM, and SIGKILL `killGrace` later.
    func supervise(
        by watcher: HookWatcher, timeoutMilliseconds: Int, killGrace: DispatchTimeInterval,
        done: @escaping (HookOutcome) -> Void
    ) {
        self.done = done
        self.watcher = watcher
        exitDescriptor = pidfd_open(pid, 0)
        let watched = watcher.watch(self)
        if exitDescriptor >= 0 && !watched.contains(exitDescriptor) {
            close(exitDescriptor)
            exitDescriptor = -1
        }
        if exitDescriptor < 0 {
            let poll = DispatchSource.makeTimerSource(queue: queue)
            poll.schedule(deadline: .now() + .milliseconds(20), repeating: .milliseconds(20))
            poll.setEventHandler { [self] in reap() }
            exitPoll = poll
            poll.resume()
        }
        if timeoutMilliseconds > 0 {
            after(.milliseconds(timeoutMilliseconds)) { [self] in
                // A run cancelled (at stop) before its timeout is reported as killed, not as timed out.
                guard !signalled else { return }
                timedOut = true
                terminate(killGrace: killGrace)
            }
        }
    }

    /// The pipe is readable: keep its tail; at its end, stop watching it.
    func outputReadable() {
        guard let watcher, outputDescriptor >= 0, !tail.readAvailable(from: outputDescriptor) else { return }
        watcher.forget(outputDescriptor)
        close(outputDescriptor)
        outputDescriptor = -1
    }

    /// SIGTERM to the hook's process group now, SIGKILL after `killGrace` if it has not exited by then.
    func terminate(killGrace: DispatchTimeInterval) {
        guard done != nil, !signalled else { return }
        signalled = true
        kill(-pid, SIGTERM)
        after(killGrace) { [self] in
            if done != nil { kill(-pid, SIGKILL) }
        }
    }

    /// `interval` in nanoseconds, saturating (a configured timeout of centuries is "never", not a trap).
    private static func nanoseconds(_ interval: DispatchTimeInterval) -> UInt64 {
        func scaled(_ value: Int, _ factor: UInt64) -> UInt64 {
            let (product, overflow) = UInt64(max(value, 0)).multipliedReportingOverflow(by: factor)
            return overflow ? .max : product
        }
        switch interval {
        case .seconds(let value): return scaled(value, 1_000_000_000)
        case .milliseconds(let value): return scaled(value, 1_000_000)
        case .microseconds(let value): return scaled(value, 1_000)
        case .nanoseconds(let value): return scaled(value, 1)
        case .never: return .max
        @unknown default: return .max
        }
    }

    /// Runs `handler` after `interval`, replacing the deadline set before: the watcher's one timer, not a
    /// Dispatch timer per hook (each would be armed and cancelled through libdispatch's manager thread).
    private func after(_ interval: DispatchTimeInterval, _ handler: @escaping () -> Void) {
        guard let watcher else { return }
        deadlinePassed = handler
        let (deadline, overflow) = PollerTimer.now().addingReportingOverflow(Self.nanoseconds(interval))
        watcher.setDeadline(of: self, at: overflow ? .max : deadline)
    }

    /// The pidfd is readable (or the poll timer fired): if the process has exited, collect it and finish.
    func reap() {
        var status: Int32 = 0
        let waited = waitpid(pid, &status, WNOHANG)
        guard waited == pid || (waited < 0 && errno == ECHILD), let done else { return }
        self.done = nil
        // What the hook wrote before it exited is in the pipe now; a child it left behind may keep the pipe open,
        // so only what is there is read.
        if outputDescriptor >= 0 {
            _ = tail.readAvailable(from: outputDescriptor)
            watcher?.forget(outputDescriptor)
            close(outputDescriptor)
            outputDescriptor = -1
        }
        if exitDescriptor >= 0 {
            watcher?.forget(exitDescriptor)
            close(exitDescriptor)
            exitDescriptor = -1
        }
        exitPoll?.cancel()
        exitPoll = nil
        deadlinePassed = nil
        watcher?.clearDeadline(of: self)
        let exitStatus: HookExitStatus
        if timedOut {
            exitStatus = .timedOut
        } else if status & 0x7f == 0 {
            exitStatus = .exited((status >> 8) & 0xff)
        } else {
            exitStatus = .killed(signal: status & 0x7f)
        }
        let milliseconds = Int((PollerTimer.now() - started) / 1_000_000)
        done(HookOutcome(name: name, status: exitStatus, durationMilliseconds: milliseconds, outputTail: tail.text))
    }
}

/// The descriptors of running hooks (pipes and pidfds) in one epoll set of netdevd's own, watched by the
/// ``Poller`` for as long as the runner lives, and their deadlines, served by one ``PollerTimer``. Not a Dispatch
/// source per descriptor or a Dispatch timer per deadline: each costs wake-ups of libdispatch's manager thread
/// (see ``Poller``), and libdispatch's epoll bookkeeping on Linux can free a registration while its manager
/// thread still delivers an event for it when sources come and go at a high rate (swift-corelibs-libdispatch#949);
/// a burst starts thousands of hooks.
///
/// `@unchecked Sendable`: `watched`, `deadlines` and `armed` are read and written only on `queue`.
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
            let handler = entry.process.deadlinePassed
            entry.process.deadlinePassed = nil
            handler?()
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

    /// Stops watching `descriptor` (before it is closed). On queue.
    func forget(_ descriptor: Int32) {
        guard watched.removeValue(forKey: descriptor) != nil else { return }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, nil)
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

/// Why a hook could not be started: the failing call (`nil` for posix_spawn itself) and its errno.
struct SpawnFailure: Error {
    let call: String?
    let errno: Int32

    var reason: String {
        (call.map { "\($0): " } ?? "") + String(cString: strerror(errno))
    }
}

/// The last `limit` bytes read from a pipe; everything before is read and dropped, so a hook that prints
/// gigabytes costs no memory.
struct OutputTail {
    let limit: Int
    private var bytes: [UInt8] = []

    init(limit: Int) {
        self.limit = limit
    }

    /// Reads what the non-blocking `fd` has now, at most 256 KiB (a hook that never stops writing must not keep
    /// the hooks' queue from its timers and other hooks: the rest waits for the next readiness); returns `false`
    /// at end of file or on an error.
    mutating func readAvailable(from fd: Int32) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16384)
        for _ in 0..<16 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += chunk[0..<count]
                if bytes.count > limit {
                    bytes.removeFirst(bytes.count - limit)
                }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
        return true
    }

    var text: String {
        var view = bytes[...]
        while let last = view.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 {
            view = view.dropLast()
        }
        while let first = view.first, first == 0x0A || first == 0x0D || first == 0x20 || first == 0x09 {
            view = view.dropFirst()
        }
        return String(decoding: view, as: UTF8.self)
    }
}
