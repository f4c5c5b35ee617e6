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
///     netdevd_spawn ─▶ pidfd readable ──▶ waitpid ─┐
///                      pipe readable ───▶ tail     ├─▶ done(outcome); descriptors closed
///                      timeout deadline ─▶ SIGTERM ┘
///                                          └▶ grace deadline ▶ SIGKILL
///
/// A hook's run ends when its main process exits; whatever it left running in its process group gets SIGTERM
/// then, and SIGKILL after the grace (a hook that must start something lasting uses `systemd-run`).
///
/// The pidfd is made by the clone that makes the process; where the kernel makes none (before 5.2, or a seccomp
/// filter), pidfd_open is tried, and where that is refused too, the exit is checked every 20 ms instead.
///
/// `@unchecked Sendable`: every property is read and written only on `queue`, where all methods run.
final class HookProcess: @unchecked Sendable {
    private let name: String
    let pid: pid_t
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
    private var deadlinePassed: (() -> Void)?
    private var signalled = false
    private var timedOut = false
    private var done: ((HookOutcome, _ leftProcesses: Bool) -> Void)?
    /// Its main process has not been reaped yet.
    var isRunning: Bool { done != nil }
    private var killGrace: DispatchTimeInterval = .seconds(5)

    private init(name: String, pid: pid_t, outputDescriptor: Int32, tailBytes: Int, queue: DispatchQueue) {
        self.name = name
        self.pid = pid
        self.outputDescriptor = outputDescriptor
        self.tail = OutputTail(limit: tailBytes)
        self.queue = queue
        self.started = PollerTimer.now()
    }

    /// Starts `hook` with `arguments` and `environment` in a process group of its own, as `credentials`' user
    /// (the runner's own when `nil`), standard input from `input` (/dev/null when -1) and standard output and error
    /// into a pipe. On
    /// queue only. Returns the reason when it cannot.
    static func spawn(
        _ hook: HookFile,
        arguments: [String],
        environment: [String],
        credentials: HookCredentials? = nil,
        input: Int32 = -1,
        tailBytes: Int,
        queue: DispatchQueue
    ) -> Result<HookProcess, SpawnFailure> {
        var ends: [Int32] = [0, 0]
        // Close-on-exec from creation: another hook spawned meanwhile must not inherit this pipe.
        guard pipe2(&ends, O_CLOEXEC) == 0 else { return .failure(SpawnFailure(call: "pipe2", errno: errno)) }
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)  // a pipe's read end has no other status flag set
        var pid: pid_t = 0
        var exitDescriptor: Int32 = -1
        let spawned = CStrings.with(arguments) { argv in
            CStrings.with(environment) { envp in
                guard let credentials else {
                    return netdevd_spawn(hook.path, argv, envp, input, ends[1], nil, &pid, &exitDescriptor)
                }
                return credentials.groups.withUnsafeBufferPointer { groups in
                    var identity = netdevd_credentials(
                        uid: credentials.uid, gid: credentials.gid, group_count: groups.count,
                        groups: groups.baseAddress)
                    return netdevd_spawn(hook.path, argv, envp, input, ends[1], &identity, &pid, &exitDescriptor)
                }
            }
        }
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            return .failure(SpawnFailure(call: nil, errno: spawned))
        }
        let process = HookProcess(
            name: hook.name, pid: pid, outputDescriptor: ends[0], tailBytes: tailBytes, queue: queue)
        process.exitDescriptor = exitDescriptor
        return .success(process)
    }

    /// Watches the process until it exits, then calls `done` once, on queue. `timeoutMilliseconds` 0 means no
    /// limit; past it the group gets SIGTERM, and SIGKILL `killGrace` later.
    func supervise(
        by watcher: HookWatcher, timeoutMilliseconds: Int, killGrace: DispatchTimeInterval,
        done: @escaping (HookOutcome, _ leftProcesses: Bool) -> Void
    ) {
        self.done = done
        self.watcher = watcher
        self.killGrace = killGrace
        watcher.track(self)
        if exitDescriptor < 0 {
            exitDescriptor = pidfd_open(pid, 0)
        }
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

    /// SIGTERM to the hook's process group now, SIGKILL after `killGrace` if it has not exited by then; a second
    /// call sends SIGKILL at once.
    func terminate(killGrace: DispatchTimeInterval) {
        guard done != nil else { return }
        guard !signalled else {
            Glibc.kill(-pid, SIGKILL)
            return
        }
        signalled = true
        Glibc.kill(-pid, SIGTERM)
        after(killGrace) { [self] in
            if done != nil { Glibc.kill(-pid, SIGKILL) }
        }
    }

    /// SIGKILL to the hook's process group, whether its main process runs or only what it left behind does
    /// (netdevd is about to exit; nothing of a hook may outlive it).
    func killGroup() {
        if done != nil || leftoversMayRun() { Glibc.kill(-pid, SIGKILL) }
    }

    /// The process group may still hold what the hook left behind: it has members, and its id is not the pid of
    /// a hook netdevd started since. (The id stays reserved while any member runs; if they all ended, it could be
    /// taken again, most likely by a new hook of ours, since each leads its group. Another process would need the
    /// pids to wrap around within the grace.)
    private func leftoversMayRun() -> Bool {
        Glibc.kill(-pid, 0) == 0 && !(watcher?.isSupervisedLeader(pid, other: self) ?? false)
    }

    /// The hook's main process has exited: what it left running in its process group ends with it (SIGTERM now,
    /// SIGKILL after the grace; SIGKILL at once if the group was signalled already, at a timeout or at the stop).
    /// Returns `true` when a hook that exited on its own left something. The group's id stays taken while any of
    /// it runs, so the signals cannot reach another process.
    private func endLeftovers(killGrace: DispatchTimeInterval) -> Bool {
        guard Glibc.kill(-pid, 0) == 0 else { return false }
        if signalled {
            // The group had its SIGTERM with the hook: what is still there may be dying of it (a pipeline's
            // processes), so SIGKILL without a word.
            Glibc.kill(-pid, SIGKILL)
            return false
        } else {
            Glibc.kill(-pid, SIGTERM)
            after(killGrace) { [self] in
                if leftoversMayRun() { Glibc.kill(-pid, SIGKILL) }
                watcher?.untrack(self)
            }
        }
        return true
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

    /// The process's deadline has passed (the watcher's timer): runs what was to happen then, once.
    func passDeadline() {
        let handler = deadlinePassed
        deadlinePassed = nil
        handler?()
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
        let leftProcesses = endLeftovers(killGrace: killGrace)
        if !leftProcesses || signalled { watcher?.untrack(self) }
        let exitStatus: HookExitStatus
        if timedOut {
            exitStatus = .timedOut
        } else if status & 0x7f == 0 {
            exitStatus = .exited((status >> 8) & 0xff)
        } else {
            exitStatus = .killed(signal: status & 0x7f)
        }
        let milliseconds = Int((PollerTimer.now() - started) / 1_000_000)
        done(
            HookOutcome(name: name, status: exitStatus, durationMilliseconds: milliseconds, outputTail: tail.text),
            leftProcesses)
    }
}

/// Strings as the NULL-terminated array of C strings that `execve` takes, made in two allocations (the bytes, and
/// the pointers) rather than two per string: a hook's run passes a dozen environment variables, and a burst runs
/// thousands.
enum CStrings {
    /// Calls `body` with `strings` as C strings (each cut at its first NUL, as C reads it), valid only during `body`.
    static func with<Result>(
        _ strings: [String], _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result {
        let total = strings.reduce(0) { $0 + $1.utf8.count + 1 }
        let bytes = UnsafeMutablePointer<CChar>.allocate(capacity: max(total, 1))
        defer { bytes.deallocate() }
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: strings.count + 1)
        defer { pointers.deallocate() }
        var offset = 0
        for (position, text) in strings.enumerated() {
            pointers[position] = bytes + offset
            for byte in text.utf8 {
                bytes[offset] = CChar(bitPattern: byte)
                offset += 1
            }
            bytes[offset] = 0
            offset += 1
        }
        pointers[strings.count] = nil
        return body(pointers)
    }
}

/// Why a hook could not be started: the failing call (`nil` for netdevd_spawn itself, the exec included) and its
/// errno.
struct SpawnFailure: Error {
    let call: String?
    let errno: Int32

    var reason: String {
        (call.map { "\($0): " } ?? "") + String(cString: strerror(errno))
    }
}
