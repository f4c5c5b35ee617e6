internal import CLinux
import Dispatch
import Locking
import NetdevSession
import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// Where netdevd's hook runner is: the separate process that starts hooks, so that they do not inherit netdevd's
/// sandbox (see ``HookRunnerService``).
public enum HookRunnerEndpoint: Sendable, Equatable {
    /// A runner netdevd starts itself, as its child (`netdevd --serve-hooks` over a socket pair): without a
    /// service manager, where the runner runs as the user who started netdevd.
    case child(executable: String, arguments: [String])
    /// The runner's listening socket (`netdevd-hooks.socket` under systemd, which starts the runner on connect).
    case socket(String)
    /// A runner inside this process, on a queue of its own, over a socket pair (tests of the hook runner).
    case inProcess
}

/// netdevd's side of its connection with the hook runner: turns hook starts into requests, and the runner's
/// replies into each hook's outcome.
///
/// It connects (or starts its child runner) on the first launch after it had none, never resends a request, and
/// when the runner goes away, logs it and reports every hook it was running as ``HookExitStatus/lost(_:)``; the
/// next launch reaches a new runner (systemd starts one on connect; a child is started again).
///
/// `@unchecked Sendable`: every property is read and written only on `queue`, the hook runner's.
final class HookRunnerConnection: @unchecked Sendable {
    private let endpoint: HookRunnerEndpoint
    private let directories: [String]
    private let queue: DispatchQueue
    private let log: @Sendable (JournalEntry) -> Void
    private var socket: HookSocket?
    private var token: UInt64?
    /// The child runners netdevd has not reaped yet, by pid (a new one may start before the old one is reaped),
    /// with their pidfd and its registration.
    private var children: [pid_t: (pidfd: Int32, token: UInt64?)] = [:]
    /// The runner inside this process (``HookRunnerEndpoint/inProcess``), and its queue.
    private var service: HookRunnerService?
    private let serviceQueue = DispatchQueue(label: "netdevd.hook-runner")
    /// The networkd-dispatcher directories the runner inside this process trusts: netdevd's configuration's.
    let inProcessDispatcherDirectories = Locked<[String]>([])
    /// What each launch still waiting for its end reports to, and its hook's name.
    private var pending: [Int: (name: String, done: (HookOutcome, Bool) -> Void)] = [:]
    private var nextID = 1
    private let received = HookMessageBuffer()
    /// The last reason the runner could not be reached, said once until it is reached again.
    private var unreachable: String?

    init(
        endpoint: HookRunnerEndpoint, directories: [String], queue: DispatchQueue,
        log: @escaping @Sendable (JournalEntry) -> Void
    ) {
        self.endpoint = endpoint
        self.directories = directories
        self.queue = queue
        self.log = log
    }

    /// Asks the runner to start `hook`, with `input` as its standard input unless it is -1 (the caller keeps and
    /// closes it); `done` gets its outcome, on queue. Returns the launch's id (for ``terminate(_:)``), or `nil` when
    /// the hook could not be handed over (`done` has been called then).
    func launch(
        _ hook: HookFile, event: String, arguments: [String], environment: [String], input: Int32 = -1,
        timeoutMilliseconds: Int, killGraceMilliseconds: Int,
        done: @escaping (HookOutcome, _ leftProcesses: Bool) -> Void
    ) -> Int? {
        let id = nextID
        nextID += 1
        let request = HookRunnerRequest.start(
            HookLaunch(
                id: id, event: event, path: hook.path, arguments: arguments, environment: environment,
                timeoutMilliseconds: timeoutMilliseconds, killGraceMilliseconds: killGraceMilliseconds))
        func notStarted(_ reason: String) -> Int? {
            done(HookOutcome(name: hook.name, status: .notStarted(reason), durationMilliseconds: 0), false)
            return nil
        }
        let bytes = HookRunnerCoding.encode(request)
        guard bytes.count <= HookRunnerLimits.maximumMessageBytes else {
            return notStarted("its request is over \(HookRunnerLimits.maximumMessageBytes) bytes")
        }
        if let problem = connect() { return notStarted(problem) }
        guard let socket else { return notStarted("no hook runner") }
        pending[id] = (hook.name, done)
        guard send(bytes, on: socket, passing: input) else {
            let reason = String(cString: strerror(errno))
            pending[id] = nil
            lost("a request could not be sent: \(reason)")
            return notStarted("the hook runner could not be sent the request (\(reason))")
        }
        return id
    }

    /// SIGTERM to launch `id`'s process group, SIGKILL after its grace (a second call: SIGKILL at once).
    func terminate(_ id: Int) {
        guard let socket, pending[id] != nil else { return }
        _ = send(HookRunnerCoding.encode(HookRunnerRequest.terminate(id: id)), on: socket)
    }

    /// SIGKILL to every hook's process group, through the runner, waiting at most 2 s for it to confirm; then the
    /// connection closes (a child runner is waited for at most 1 s more). netdevd is exiting.
    func stopAll() {
        if let socket {
            let bytes = HookRunnerCoding.encode(HookRunnerRequest.stopAll)
            if let token { Poller.shared?.unregister(token) }
            token = nil
            if send(bytes, on: socket) {
                let deadline = PollerTimer.now() + 2_000_000_000
                waiting: while PollerTimer.now() < deadline {
                    let left = Int32((deadline - min(PollerTimer.now(), deadline)) / 1_000_000)
                    switch socket.receive(waitingAtMost: max(left, 1), into: received) {
                    case .message(let reply):
                        if HookRunnerCoding.decodeReply(reply) == .stoppedAll { break waiting }
                    case .none: continue
                    case .oversized, .closed: break waiting
                    }
                }
            }
            socket.close()
            self.socket = nil
        }
        pending = [:]
        for (pid, child) in children {
            if let token = child.token { Poller.shared?.unregister(token) }
            for _ in 0..<100 where waitpid(pid, nil, WNOHANG) == 0 { usleep(10_000) }
            if child.pidfd >= 0 { close(child.pidfd) }
        }
        children = [:]
    }

    /// Sends without blocking the hooks' queue (it is the loop's): a runner that does not read for 100 ms more is
    /// not waited for.
    private func send(_ bytes: [UInt8], on socket: HookSocket, passing: Int32 = -1) -> Bool {
        if socket.send(bytes, passing: passing, waiting: false) { return true }
        guard errno == EAGAIN || errno == EWOULDBLOCK else { return false }
        var entry = pollfd(fd: socket.descriptor, events: Int16(POLLOUT), revents: 0)
        guard poll(&entry, 1, 100) == 1 else {
            errno = EAGAIN
            return false
        }
        return socket.send(bytes, passing: passing, waiting: false)
    }

    /// Reaches the runner unless connected; returns why it cannot.
    private func connect() -> String? {
        if socket != nil { return nil }
        let connected: Result<HookSocket, SpawnFailure>
        switch endpoint {
        case .socket(let path):
            connected = HookSocket.connect(to: path).mapError {
                SpawnFailure(call: "connect to \(path)", errno: $0.errno)
            }
        case .child(let executable, let arguments):
            connected = startChild(executable, arguments)
        case .inProcess:
            connected = startInProcess()
        }
        switch connected {
        case .success(let socket):
            self.socket = socket
            unreachable = nil
            token = Poller.shared?.register(socket.descriptor, queue: queue) { [weak self] in self?.readable() }
            if token == nil {
                lost("its socket cannot be watched")
                return "the hook runner's socket cannot be watched"
            }
            return nil
        case .failure(let failure):
            let reason = "the hook runner cannot be reached (\(failure.reason))"
            if unreachable != reason {
                unreachable = reason
                log(JournalEntry(message: "Hooks do not run: \(reason)", priority: .error))
            }
            return reason
        }
    }

    private func startChild(_ executable: String, _ arguments: [String]) -> Result<HookSocket, SpawnFailure> {
        guard let (ours, theirs) = HookSocket.pair() else {
            return .failure(SpawnFailure(call: "socketpair", errno: errno))
        }
        var pid: pid_t = 0
        var pidfd: Int32 = -1
        let spawned = CStrings.with([executable] + arguments) { argv in
            CStrings.with(HookRunnerService.baseEnvironment) { envp in
                netdevd_spawn(executable, argv, envp, theirs.descriptor, STDERR_FILENO, nil, &pid, &pidfd)
            }
        }
        theirs.close()
        guard spawned == 0 else {
            ours.close()
            return .failure(SpawnFailure(call: executable, errno: spawned))
        }
        if pidfd < 0 { pidfd = pidfd_open(pid, 0) }
        var token: UInt64?
        if pidfd >= 0 {
            let child = pid
            token = Poller.shared?.register(pidfd, queue: queue) { [weak self] in self?.reapChild(child) }
        }
        children[pid] = (pidfd, token)
        return .success(ours)
    }

    private func startInProcess() -> Result<HookSocket, SpawnFailure> {
        guard let (ours, theirs) = HookSocket.pair() else {
            return .failure(SpawnFailure(call: "socketpair", errno: errno))
        }
        let service = HookRunnerService(
            socket: theirs, directories: directories, credentials: { .success(nil) },
            dispatcherDirectories: { [inProcessDispatcherDirectories] in inProcessDispatcherDirectories.withLock { $0 }
            },
            queue: serviceQueue, log: log, ended: {})
        serviceQueue.sync { _ = service.start() }
        self.service = service
        return .success(ours)
    }

    /// Child runner `pid` has exited: reaped, and said unless it exited with status 0 (its connection had ended).
    private func reapChild(_ pid: pid_t) {
        guard let child = children[pid] else { return }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return }
        if let token = child.token { Poller.shared?.unregister(token) }
        if child.pidfd >= 0 { close(child.pidfd) }
        children[pid] = nil
        let how =
            status & 0x7f == 0 ? "exited with status \((status >> 8) & 0xff)" : "was killed by signal \(status & 0x7f)"
        if status != 0 {
            log(JournalEntry(message: "The hook runner (pid \(pid)) \(how)", priority: .error))
        }
    }

    private func readable() {
        guard let socket, let current = token else { return }
        // A hook's end may start the next hook, and that launch may lose this connection and make another (which
        // can get the same descriptor number): reading stops as soon as the connection is not this one.
        for _ in 0..<64 where self.token == current {
            switch socket.receive(into: received) {
            case .message(let bytes):
                switch HookRunnerCoding.decodeReply(bytes) {
                case .ended(let id, let outcome, let leftProcesses):
                    pending.removeValue(forKey: id)?.done(outcome, leftProcesses)
                case .started, .stoppedAll: break
                case nil:
                    lost("it sent a reply netdevd cannot read")
                    return
                }
            case .oversized(let count):
                lost("it sent a reply of \(count) bytes")
                return
            case .none: return
            case .closed(let error):
                lost(error == 0 ? "it closed its end" : String(cString: strerror(error)))
                return
            }
        }
    }

    /// The connection is over: every hook the runner was running is reported lost, and said once.
    private func lost(_ reason: String) {
        if let token { Poller.shared?.unregister(token) }
        token = nil
        socket?.close()
        socket = nil
        // An in-process runner sees its end closed and stops its hooks; told too, so it lets go of its descriptor.
        service?.stop()
        service = nil
        let runs = pending
        pending = [:]
        log(
            JournalEntry(
                message:
                    "The hook runner went away (\(reason)); \(quantity(runs.count, "running hook")) counted as failed; "
                    + "the next hook run starts it again",
                priority: .error))
        for (_, run) in runs.sorted(by: { $0.key < $1.key }) {
            run.done(
                HookOutcome(
                    name: run.name, status: .lost("the hook runner went away while it ran"), durationMilliseconds: 0),
                false)
        }
    }
}
