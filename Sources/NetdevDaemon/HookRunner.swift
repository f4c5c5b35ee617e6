public import Dispatch
import Locking
import MobiusCore
public import NetdevSession
public import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// One hook executable found in the hook directories.
public struct HookFile: Sendable, Equatable {
    /// The file name (the hook's name in the journal).
    public var name: String
    /// The full path.
    public var path: String
    /// Why it must not run (not root's, writable by others, not executable), or `nil` when it may.
    public var refusal: String?
}

/// Runs hook executables: found in `/etc/netdevd/hooks.d` and `/usr/lib/netdevd/hooks.d` (a same-named file in
/// `/etc` overrides, and one that is a symlink to `/dev/null` masks), in lexical order, with posix_spawn and no
/// shell, a clean documented environment, and the event name and subject as arguments.
///
/// Each hook's standard output and error go into a pipe of which only the last ``outputTailBytes`` are kept (a
/// hook that prints gigabytes costs no memory) and are written to the journal under the hook's name. A hook that
/// runs past its timeout gets SIGTERM, then SIGKILL after ``killGrace``; its process group goes with it. What a
/// hook leaves running in its process group when it exits is stopped the same way, and ``killAll()`` kills
/// every hook's group as netdevd exits. Only
/// files owned by root and not writable by group or others run; the others are refused with the reason.
public final class HookRunner: Sendable {
    /// The reason of a hook that was not started because its run was cancelled (not a failure).
    static let cancelledReason = "cancelled"

    /// Finds the hooks before every run.
    private let discovery: HookDiscovery
    /// How much of a hook's output is kept, from the end.
    public let outputTailBytes = 4096
    /// How long a hook has between SIGTERM and SIGKILL.
    public let killGrace: DispatchTimeInterval
    private let log: @Sendable (JournalEntry) -> Void
    /// The runs in progress, by id (for ``cancel(_:)``).
    private let executions = Locked<[Int: RunExecution]>([:])
    /// Where discovery, spawning and supervision happen: a serial queue no hook ever blocks (netdevd targets it at
    /// the loop's queue, so a run starts and ends without a thread hop; `posix_spawn` returns once the child has
    /// exec'd, and no hook is waited for).
    fileprivate let queue: DispatchQueue
    /// The running hooks' pipes and pidfds (`nil` if the kernel gave no epoll descriptor: hooks are then refused).
    fileprivate let watcher: HookWatcher?
    /// The queue `queue` targets, if any (``killAll()`` does not wait for it from its own thread).
    private let target: DispatchQueue?

    /// A runner over `directories` that hands each hook's output to `log` as a journal entry.
    public init(
        directories: [String] = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"],
        killGrace: DispatchTimeInterval = .seconds(5),
        target: DispatchQueue? = nil,
        log: @escaping @Sendable (JournalEntry) -> Void
    ) {
        self.queue = DispatchQueue(label: "netdevd.hooks", target: target)
        self.target = target
        self.discovery = HookDiscovery(directories: directories) { directory, problem in
            log(
                JournalEntry(
                    message: "Hook directory \(directory) \(problem): its hooks do not run until it can be read",
                    priority: .error))
        }
        self.killGrace = killGrace
        self.log = log
        self.watcher = HookWatcher(queue: queue)
    }

    /// The hooks that would run now, in lexical order, with refusals explained.
    public func hooks() -> [HookFile] {
        discovery.hooks()
    }

    /// Runs every hook for `run`, one after another, then calls `finished` with the result (on the runner's
    /// queue). No thread waits for a hook: see ``HookProcess``.
    public func start(
        _ run: HookRun,
        timeoutMilliseconds: Int,
        finished: @escaping @Sendable (HookRunResult) -> Void
    ) {
        queue.async { [self] in
            let hooks = hooks()
            guard !hooks.isEmpty else {
                finished(HookRunResult(runID: run.id, hooks: []))
                return
            }
            let execution = RunExecution(
                run: run, hooks: hooks, environment: Self.environment(for: run),
                timeoutMilliseconds: timeoutMilliseconds, runner: self
            ) { [self] result in
                executions.withLock { _ = $0.removeValue(forKey: run.id) }
                finished(result)
            }
            executions.withLock { $0[run.id] = execution }
            execution.advance()
        }
    }

    /// Stops the hooks of these runs (SIGTERM, then SIGKILL); hooks not yet started in them are skipped.
    public func cancel(_ runIDs: [Int]) {
        queue.async { [self] in
            let cancelled = executions.withLock { running in runIDs.compactMap { running[$0] } }
            for execution in cancelled { execution.cancel() }
        }
    }

    /// SIGKILL to every hook process group still running, or left behind by a hook within its grace: netdevd is
    /// exiting, and nothing of a hook outlives it. Waits for the runner's queue; called on the main thread while
    /// the runner's queue targets the main queue (netdevd's stop), it runs at once: no work of that queue can run
    /// meanwhile, and waiting for the main queue from the main thread would never end.
    public func killAll() {
        if let target, MainQueue.isMain(target), MainQueue.isCurrent {
            watcher?.killAll()
        } else {
            queue.sync { watcher?.killAll() }
        }
    }

    /// Says that a hook left processes running in its process group when it exited, and that they are stopped.
    fileprivate func logLeftovers(of outcome: HookOutcome, in run: HookRun) {
        var entry = JournalEntry(
            message:
                "Hook \(outcome.name) (\(run.event.rawValue) \(run.subjectName)) exited and left processes running in "
                + "its process group; they were sent SIGTERM, then SIGKILL after \(killGraceDescription). Start what "
                + "must outlive a hook with systemd-run.",
            priority: .warning)
        entry.append(.normalizing("NETDEVD_HOOK"), outcome.name)
        entry.append(.normalizing("NETDEVD_HOOK_RUN"), String(run.id))
        entry.append(.normalizing("NETDEVD_HOOK_EVENT"), run.event.rawValue)
        log(entry)
    }

    private var killGraceDescription: String {
        switch killGrace {
        case .seconds(let value): "\(value) s"
        case .milliseconds(let value): value % 1000 == 0 ? "\(value / 1000) s" : "\(value) ms"
        default: "the grace"
        }
    }

    /// Writes a hook's output to the journal under the hook's name.
    fileprivate func logOutput(of outcome: HookOutcome, in run: HookRun) {
        guard !outcome.outputTail.isEmpty else { return }
        var entry = JournalEntry(message: outcome.outputTail, priority: outcome.status == .exited(0) ? .info : .warning)
        entry.append(.syslogIdentifier, outcome.name)
        entry.append(.normalizing("NETDEVD_HOOK_RUN"), String(run.id))
        entry.append(.normalizing("NETDEVD_HOOK_EVENT"), run.event.rawValue)
        log(entry)
    }

    /// The clean environment: a fixed PATH, the run's `NETDEVD_*` values and `NETDEVD_JSON`.
    static func environment(for run: HookRun) -> [String] {
        var values = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
        values += run.environment.map { "\($0.name)=\($0.value)" }
        if let link = run.link {
            values.append("NETDEVD_JSON=" + HookJSON.describe(link))
        } else if let device = run.device {
            values.append("NETDEVD_JSON=" + HookJSON.describe(device))
        }
        return values
    }
}

/// One run's hooks, started one after another on the runner's queue as each one's process exits.
///
/// `@unchecked Sendable`: every property is read and written only on the runner's serial queue.
private final class RunExecution: @unchecked Sendable {
    let run: HookRun
    let hooks: [HookFile]
    let environment: [String]
    let timeoutMilliseconds: Int
    unowned let runner: HookRunner
    let finished: (HookRunResult) -> Void
    var outcomes: [HookOutcome] = []
    var next = 0
    var cancelled = false
    var current: HookProcess?

    init(
        run: HookRun, hooks: [HookFile], environment: [String], timeoutMilliseconds: Int, runner: HookRunner,
        finished: @escaping (HookRunResult) -> Void
    ) {
        self.run = run
        self.hooks = hooks
        self.environment = environment
        self.timeoutMilliseconds = timeoutMilliseconds
        self.runner = runner
        self.finished = finished
    }

    /// Starts the next hook that may run, or reports the run's result when none is left.
    func advance() {
        while next < hooks.count {
            let hook = hooks[next]
            next += 1
            if cancelled {
                outcomes.append(
                    HookOutcome(
                        name: hook.name, status: .notStarted(HookRunner.cancelledReason), durationMilliseconds: 0))
                continue
            }
            if let refusal = hook.refusal {
                outcomes.append(HookOutcome(name: hook.name, status: .notStarted(refusal), durationMilliseconds: 0))
                continue
            }
            guard let watcher = runner.watcher else {
                outcomes.append(
                    HookOutcome(
                        name: hook.name,
                        status: .notStarted("no epoll descriptor, timerfd or poller thread to watch it with"),
                        durationMilliseconds: 0))
                continue
            }
            let spawned = HookProcess.spawn(
                hook, arguments: [hook.path, run.event.rawValue, run.subjectName], environment: environment,
                tailBytes: runner.outputTailBytes, queue: runner.queue)
            switch spawned {
            case .failure(let failure):
                outcomes.append(
                    HookOutcome(name: hook.name, status: .notStarted(failure.reason), durationMilliseconds: 0))
            case .success(let process):
                current = process
                process.supervise(by: watcher, timeoutMilliseconds: timeoutMilliseconds, killGrace: runner.killGrace) {
                    [self] outcome, leftProcesses in
                    current = nil
                    runner.logOutput(of: outcome, in: run)
                    if leftProcesses { runner.logLeftovers(of: outcome, in: run) }
                    outcomes.append(outcome)
                    advance()
                }
                return
            }
        }
        finished(HookRunResult(runID: run.id, hooks: outcomes))
    }

    func cancel() {
        cancelled = true
        current?.terminate(killGrace: runner.killGrace)
    }
}
