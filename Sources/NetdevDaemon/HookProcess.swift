internal import CLinux
import Dispatch
import NetdevSession

#if canImport(Glibc)
import Glibc
#endif

/// One hook process, supervised without a thread of its own: its exit (a pidfd), its output (the read end of its
/// pipe) and its deadlines (timers) are Dispatch sources on the runner's serial queue. Every handler is installed
/// before its source is resumed, so none can fire unobserved.
///
///     posix_spawn ─▶ pidfd readable ──▶ waitpid ─┐
///                    pipe readable ───▶ tail     ├─▶ done(outcome), sources cancelled (their cancel handlers
///                    timeout timer ───▶ SIGTERM ─┘   close the descriptors, as libdispatch requires)
///                                       └▶ grace timer ▶ SIGKILL
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
    private var output: (any DispatchSourceRead)?
    private let outputDescriptor: Int32
    private var exit: (any DispatchSourceProtocol)?
    private var timers: [any DispatchSourceTimer] = []
    private var signalled = false
    private var timedOut = false
    private var done: ((HookOutcome) -> Void)?

    private init(name: String, pid: pid_t, outputDescriptor: Int32, tailBytes: Int, queue: DispatchQueue) {
        self.name = name
        self.pid = pid
        self.outputDescriptor = outputDescriptor
        self.tail = OutputTail(limit: tailBytes)
        self.queue = queue
        self.started = DispatchTime.now().uptimeNanoseconds
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
        timeoutMilliseconds: Int, killGrace: DispatchTimeInterval, done: @escaping (HookOutcome) -> Void
    ) {
        self.done = done
        let output = DispatchSource.makeReadSource(fileDescriptor: outputDescriptor, queue: queue)
        let descriptor = outputDescriptor
        output.setEventHandler { [self] in
            if !tail.readAvailable(from: descriptor) {
                self.output?.cancel()
                self.output = nil
            }
        }
        output.setCancelHandler { close(descriptor) }
        self.output = output
        output.resume()

        let pidfd = pidfd_open(pid, 0)
        if pidfd >= 0 {
            let exit = DispatchSource.makeReadSource(fileDescriptor: pidfd, queue: queue)
            exit.setEventHandler { [self] in reap() }
            exit.setCancelHandler { close(pidfd) }
            self.exit = exit
            exit.resume()
        } else {
            let poll = DispatchSource.makeTimerSource(queue: queue)
            poll.schedule(deadline: .now() + .milliseconds(20), repeating: .milliseconds(20))
            poll.setEventHandler { [self] in reap() }
            self.exit = poll
            poll.resume()
        }
        if timeoutMilliseconds > 0 {
            after(.milliseconds(timeoutMilliseconds)) { [self] in
                timedOut = true
                terminate(killGrace: killGrace)
            }
        }
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

    private func after(_ interval: DispatchTimeInterval, _ handler: @escaping () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval)
        timer.setEventHandler(handler: handler)
        timers.append(timer)
        timer.resume()
    }

    private func reap() {
        var status: Int32 = 0
        let waited = waitpid(pid, &status, WNOHANG)
        guard waited == pid || (waited < 0 && errno == ECHILD), let done else { return }
        self.done = nil
        // What the hook wrote before it exited is in the pipe now; a child it left behind may keep the pipe open,
        // so only what is there is read.
        if output != nil {
            _ = tail.readAvailable(from: outputDescriptor)
        }
        output?.cancel()
        output = nil
        exit?.cancel()
        exit = nil
        for timer in timers { timer.cancel() }
        timers = []
        let exitStatus: HookExitStatus
        if timedOut {
            exitStatus = .timedOut
        } else if status & 0x7f == 0 {
            exitStatus = .exited((status >> 8) & 0xff)
        } else {
            exitStatus = .killed(signal: status & 0x7f)
        }
        let milliseconds = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        done(HookOutcome(name: name, status: exitStatus, durationMilliseconds: milliseconds, outputTail: tail.text))
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

    /// Reads what the non-blocking `fd` has now; returns `false` at end of file or on an error.
    mutating func readAvailable(from fd: Int32) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
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
