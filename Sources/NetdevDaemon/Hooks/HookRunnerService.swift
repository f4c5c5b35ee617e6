import Dispatch
import NetdevSession
import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// The hook runner's side of its connection with netdevd: starts the hooks netdevd asks for and reports each one's
/// start and end (with the tail of its output), and does nothing else.
///
/// Every request is checked as if it came from anyone: its sizes and names (``HookLaunch/problem(allowedNames:)``),
/// and the hook itself, which must be one the runner finds in its own directories and may run under the same
/// ownership rules as everywhere (``HookDiscovery``). A request that fails is answered as a hook that did not start,
/// and said in the journal. The user hooks run as comes from the runner's configuration, never from a request.
///
/// When netdevd's end closes (netdevd exited or died), every running hook gets SIGTERM, then SIGKILL after its
/// grace, and ``ended`` is called once none is left.
///
/// `@unchecked Sendable`: every property is read and written only on `queue`.
final class HookRunnerService: @unchecked Sendable {
    private let socket: HookSocket
    private let queue: DispatchQueue
    private let catalog: HookCatalog
    /// Resolves `[Hooks] User=` and `Group=` from the configuration.
    private let resolveCredentials: @Sendable () -> Result<HookCredentials?, HookCredentialsProblem>
    /// Reads `[Hooks] NetworkdDispatcherDirectory=` from the configuration.
    private let resolveDispatcherDirectories: @Sendable () -> [String]
    /// The networkd-dispatcher directories scripts may come from; read again when a start names a script not
    /// found under them (netdevd was reloaded with new ones).
    private var dispatcherDirectories: [String]
    /// When the directories were last read (uptime nanoseconds).
    private var dispatcherDirectoriesRead: UInt64 = 0
    /// The credentials hooks start with; resolved again before a launch while they could not be (a drop-in that
    /// cannot be read keeps hooks from starting only until it is fixed, never runs them as another user).
    private var credentials: Result<HookCredentials?, HookCredentialsProblem>
    private let log: @Sendable (JournalEntry) -> Void
    private let ended: @Sendable () -> Void
    private let watcher: HookWatcher?
    private let tailBytes: Int
    private let received = HookMessageBuffer()
    /// The hooks running, by launch id, with their kill grace.
    private var running: [Int: (process: HookProcess, grace: DispatchTimeInterval)] = [:]
    private var token: UInt64?
    /// netdevd's end is closed: no request is read any more, and the service ends with its last hook.
    private var closing = false
    private var finished = false

    /// The environment every hook gets before netdevd's variables.
    static let baseEnvironment = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]

    init(
        socket: HookSocket, directories: [String],
        credentials: @escaping @Sendable () -> Result<HookCredentials?, HookCredentialsProblem>,
        dispatcherDirectories: @escaping @Sendable () -> [String] = { [] },
        tailBytes: Int = 4096, queue: DispatchQueue, log: @escaping @Sendable (JournalEntry) -> Void,
        ended: @escaping @Sendable () -> Void
    ) {
        self.socket = socket
        self.queue = queue
        self.resolveCredentials = credentials
        self.credentials = credentials()
        self.resolveDispatcherDirectories = dispatcherDirectories
        self.dispatcherDirectories = dispatcherDirectories()
        self.log = log
        self.ended = ended
        self.tailBytes = tailBytes
        self.catalog = HookCatalog(directories: directories) { directory, problem in
            log(
                JournalEntry(
                    message: "Hook directory \(directory) \(problem): its hooks do not run until it can be read",
                    priority: .error))
        }
        self.watcher = HookWatcher(queue: queue)
        // A netdevd that stops reading must not hold the runner: a reply waits at most this long, then the
        // connection is given up as if netdevd had gone.
        socket.limitSendTime(seconds: 10)
    }

    /// Starts reading requests; `false` when the descriptor cannot be watched. On queue.
    func start() -> Bool {
        token = Poller.shared?.register(socket.descriptor, queue: queue) { [weak self] in self?.readable() }
        return token != nil && watcher != nil
    }

    private func readable() {
        for _ in 0..<64 where !closing {
            switch socket.receive(into: received) {
            case .message(let bytes): handle(bytes, input: received.takeDescriptor())
            case .oversized(let count):
                // A start that is not read would never be answered: netdevd learns of it by the connection's end.
                refuse(
                    nil,
                    "a message of \(count) bytes (at most \(HookRunnerLimits.maximumMessageBytes)); the connection is closed"
                )
                close()
            case .none: return
            case .closed: close()
            }
        }
    }

    /// One request; `input` is the descriptor passed with it (a start's standard input), closed once used.
    private func handle(_ bytes: [UInt8], input: Int32) {
        defer { if input >= 0 { Glibc.close(input) } }
        guard let request = HookRunnerCoding.decodeRequest(bytes) else {
            // Not answerable (a netdevd of another version, or not netdevd): it learns of it by the connection's end.
            refuse(nil, "a message that is not a request; the connection is closed")
            close()
            return
        }
        if input >= 0, case .start(let launch) = request, launch.event != HookBatches.event {
            return refuse(launch, "a standard input passed for a hook of \(launch.event), which gets /dev/null")
        }
        switch request {
        case .start(let launch): start(launch, input: input)
        case .terminate(let id): running[id].map { $0.process.terminate(killGrace: $0.grace) }
        case .stopAll:
            watcher?.killAll()
            reply(.stoppedAll)
        }
    }

    private func start(_ launch: HookLaunch, input: Int32) {
        let prefix = NetworkdDispatcher.eventPrefix
        let dispatcherState: String? =
            launch.event.hasPrefix(prefix) ? String(launch.event.dropFirst(prefix.count)) : nil
        let problem =
            dispatcherState == nil
            ? launch.problem(allowedNames: HookRunnerLimits.isHookVariable)
            : launch.problem(allowedNames: { DispatcherEnvironment.names.contains($0) })
        if let problem {
            return refuse(launch, problem)
        }
        if dispatcherState != nil && !launch.arguments.isEmpty {
            return refuse(launch, "arguments for a networkd-dispatcher script, which gets none")
        }
        guard running[launch.id] == nil else { return refuse(launch, "launch id \(launch.id), which is running") }
        guard running.count < HookRunnerLimits.maximumRunning else {
            return refuse(launch, "more than \(HookRunnerLimits.maximumRunning) hooks at once")
        }
        let hooks: [HookFile]
        let directories: [String]
        if let state = dispatcherState {
            var listing = DispatcherScripts.scripts(of: state, in: dispatcherDirectories)
            // Not found: netdevd may have been reloaded with other directories; the configuration is read again
            // at most once a second.
            let now = DispatchTime.now().uptimeNanoseconds
            if !listing.scripts.contains(launch.path), now &- dispatcherDirectoriesRead > 1_000_000_000 {
                dispatcherDirectoriesRead = now
                dispatcherDirectories = resolveDispatcherDirectories()
                listing = DispatcherScripts.scripts(of: state, in: dispatcherDirectories)
            }
            hooks = listing.scripts.map { HookFile(name: Self.name(of: $0), path: $0, refusal: nil) }
            directories = dispatcherDirectories.map { $0 + "/" + state + ".d" }
        } else if launch.event == HookBatches.event {
            hooks = catalog.batchHooks()
            directories = catalog.batchDirectories
        } else if let event = HookEvent(rawValue: launch.event) {
            hooks = catalog.hooks(for: event)
            directories = HookCatalog.directories(for: event, hookDirectories: catalog.directories)
        } else {
            return refuse(launch, "an unknown event")
        }
        guard let hook = hooks.first(where: { $0.path == launch.path }) else {
            return refuse(
                launch,
                "\(launch.path), which is not a hook of \(launch.event) in \(directories.joined(separator: ", "))")
        }
        if let refusal = hook.refusal { return notStarted(launch, hook.name, refusal) }
        if case .failure = credentials { credentials = resolveCredentials() }
        let identity: HookCredentials?
        switch credentials {
        case .success(let resolved): identity = resolved
        case .failure(let problem): return notStarted(launch, hook.name, problem.reason)
        }
        guard let watcher else {
            return notStarted(launch, hook.name, "no epoll descriptor, timerfd or poller thread to watch it with")
        }
        let spawned = HookProcess.spawn(
            hook, arguments: [hook.path] + launch.arguments, environment: Self.baseEnvironment + launch.environment,
            credentials: identity, input: input, tailBytes: tailBytes, queue: queue)
        switch spawned {
        case .failure(let failure): notStarted(launch, hook.name, failure.reason)
        case .success(let process):
            let grace = DispatchTimeInterval.milliseconds(launch.killGraceMilliseconds)
            running[launch.id] = (process, grace)
            // Supervised before the reply: a reply that fails closes the connection, which must find the hook
            // supervised to stop it.
            process.supervise(by: watcher, timeoutMilliseconds: launch.timeoutMilliseconds, killGrace: grace) {
                [self] outcome, leftProcesses in
                running[launch.id] = nil
                reply(.ended(id: launch.id, outcome: outcome, leftProcesses: leftProcesses))
                if closing { finishIfIdle() }
            }
            reply(.started(id: launch.id, pid: process.pid))
        }
    }

    private func notStarted(_ launch: HookLaunch, _ name: String, _ reason: String) {
        let outcome = HookOutcome(name: name, status: .notStarted(reason), durationMilliseconds: 0)
        reply(.ended(id: launch.id, outcome: outcome, leftProcesses: false))
    }

    /// A request the runner will not carry out: said in the journal, and answered as a hook not started.
    private func refuse(_ launch: HookLaunch?, _ problem: String) {
        var entry = JournalEntry(message: "Refused a request from netdevd: \(problem)", priority: .warning)
        if let launch { entry.append(.normalizing("NETDEVD_HOOK_PATH"), launch.path) }
        log(entry)
        guard let launch else { return }
        notStarted(launch, Self.name(of: launch.path), "the hook runner refused it: \(problem)")
    }

    private static func name(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    private func reply(_ reply: HookRunnerReply) {
        guard !closing else { return }
        let bytes = HookRunnerCoding.encode(reply)
        if !socket.send(bytes) {
            let reason = String(cString: strerror(errno))
            log(
                JournalEntry(
                    message: "Cannot reply to netdevd (\(reason)); its hooks are stopped as if it had exited",
                    priority: .error))
            close()
        }
    }

    /// The runner is stopping (SIGTERM): as if netdevd had gone.
    func stop() {
        queue.async { [self] in close() }
    }

    /// netdevd's end is gone: no more requests; the running hooks are stopped, and the service ends with them.
    private func close() {
        guard !closing else { return }
        closing = true
        if let token { Poller.shared?.unregister(token) }
        token = nil
        for (process, grace) in running.values { process.terminate(killGrace: grace) }
        finishIfIdle()
    }

    private func finishIfIdle() {
        guard running.isEmpty, !finished else { return }
        finished = true
        // What hooks left behind within their grace goes now: nothing of a hook outlives the runner's connection.
        watcher?.killAll()
        socket.close()
        ended()
    }
}
