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
/// `/etc` overrides, and one that is a symlink to `/dev/null` masks), in lexical order, no shell, a clean documented
/// environment, and the event name and subject as arguments.
///
/// netdevd does not start them itself: its hook runner does (``HookRunnerEndpoint``), a separate process without
/// netdevd's sandbox, which checks every hook again before it starts it (``HookRunnerService``). Each hook's
/// standard output and error go into a pipe of which only the last ``outputTailBytes`` are kept (a hook that prints
/// gigabytes costs no memory) and are written to the journal under the hook's name. A hook that runs past its
/// timeout gets SIGTERM, then SIGKILL after ``killGrace``; its process group goes with it. What a hook leaves
/// running in its process group when it exits is stopped the same way, and ``killAll()`` kills every hook's group
/// as netdevd exits. Only files owned by root and not writable by group or others run; the others are refused with
/// the reason.
public final class HookRunner: Sendable {
    /// The reason of a hook that was not started because its run was cancelled (not a failure).
    static let cancelledReason = "cancelled"

    /// Finds the hooks before every run.
    let catalog: HookCatalog
    /// The batch hooks' events and runs.
    private let batches: HookBatches
    /// How much of a hook's output is kept, from the end.
    public let outputTailBytes = 4096
    /// How long a hook has between SIGTERM and SIGKILL.
    public let killGrace: DispatchTimeInterval
    let log: @Sendable (JournalEntry) -> Void
    /// The runs in progress, by id (for ``cancel(_:)``).
    private let executions = Locked<[Int: RunExecution]>([:])
    /// Where discovery and the runner's requests and replies are handled: a serial queue no hook ever blocks
    /// (netdevd targets it at the loop's queue, so a run starts and ends without a thread hop).
    let queue: DispatchQueue
    /// The hook runner, reached from `queue`.
    let connection: HookRunnerConnection
    /// The queue `queue` targets, if any (``killAll()`` does not wait for it from its own thread).
    private let target: DispatchQueue?

    /// A runner over `directories` that hands each hook's output to `log` as a journal entry.
    public init(
        directories: [String] = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"],
        killGrace: DispatchTimeInterval = .seconds(5),
        target: DispatchQueue? = nil,
        runner: HookRunnerEndpoint = .inProcess,
        log: @escaping @Sendable (JournalEntry) -> Void
    ) {
        let queue = DispatchQueue(label: "netdevd.hooks", target: target)
        self.queue = queue
        self.target = target
        let report: @Sendable (String, String) -> Void = { directory, problem in
            log(
                JournalEntry(
                    message: "Hook directory \(directory) \(problem): its hooks do not run until it can be read",
                    priority: .error))
        }
        self.catalog = HookCatalog(directories: directories, report: report)
        self.killGrace = killGrace
        self.log = log
        self.connection = HookRunnerConnection(endpoint: runner, directories: directories, queue: queue, log: log)
        self.batches = HookBatches()
    }

    /// The hooks of the hook directories (every event's), in lexical order, with refusals explained.
    public func hooks() -> [HookFile] {
        catalog.everyEventHooks()
    }

    /// The hooks that would run for `event` now: its own directory's merged with the hook directories', in
    /// lexical order, with refusals explained (``HookCatalog``).
    public func hooks(for event: HookEvent) -> [HookFile] {
        catalog.hooks(for: event)
    }

    /// How many hooks would run for each event, by the event's name, and how many files found are refused.
    public func counts() -> (hooks: [String: Int], refused: Int) {
        catalog.counts()
    }

    /// Runs every hook for `run`, one after another, then calls `finished` with the result (on the runner's
    /// queue). No thread waits for a hook: see ``HookProcess``.
    public func start(
        _ run: HookRun,
        timeoutMilliseconds: Int,
        finished: @escaping @Sendable (HookRunResult) -> Void
    ) {
        queue.async { [self] in
            batches.add(run, timeoutMilliseconds: timeoutMilliseconds, runner: self)
            let hooks = hooks(for: run.event)
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

    /// SIGKILL to every hook process group still running, or left behind by a hook within its grace, through the
    /// hook runner (waiting a few seconds at most for it to confirm): netdevd is exiting, and nothing of a hook
    /// outlives it. Waits for the runner's queue; called on the main thread while the runner's queue targets the
    /// main queue (netdevd's stop), it runs at once: no work of that queue can run meanwhile, and waiting for the
    /// main queue from the main thread would never end.
    public func killAll() {
        if let target, MainQueue.isMain(target), MainQueue.isCurrent {
            connection.stopAll()
        } else {
            queue.sync { connection.stopAll() }
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

    var killGraceMilliseconds: Int {
        switch killGrace {
        case .seconds(let value): value.multipliedReportingOverflow(by: 1000).overflow ? .max : value * 1000
        case .milliseconds(let value): value
        case .microseconds(let value): value / 1000
        case .nanoseconds(let value): value / 1_000_000
        case .never: HookRunnerLimits.maximumKillGraceMilliseconds
        @unknown default: 5_000
        }
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

    /// The run's `NETDEVD_*` values and `NETDEVD_JSON` (the runner puts a fixed `PATH` and `LANG` before them).
    static func environment(for run: HookRun) -> [String] {
        var values = run.environment.map { "\($0.name)=\($0.value)" }
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
    /// The launch running now, by the runner's id.
    var current: Int?
    /// The current hook was handed to the runner: its end advances the run (a hook that could not be handed over
    /// reports within the launch, and the loop in ``advance()`` goes on).
    var launched = false

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
            // A hook that cannot be handed over reports within the launch, and this loop goes on; one that was
            // handed over advances the run when it ends.
            launched = false
            current = runner.connection.launch(
                hook, event: run.event.rawValue, arguments: [run.event.rawValue, run.subjectName],
                environment: environment,
                timeoutMilliseconds: timeoutMilliseconds, killGraceMilliseconds: runner.killGraceMilliseconds
            ) { [self] outcome, leftProcesses in
                current = nil
                runner.logOutput(of: outcome, in: run)
                if leftProcesses { runner.logLeftovers(of: outcome, in: run) }
                outcomes.append(outcome)
                if launched { advance() }
            }
            launched = current != nil
            if launched { return }
        }
        finished(HookRunResult(runID: run.id, hooks: outcomes))
    }

    func cancel() {
        cancelled = true
        if let current { runner.connection.terminate(current) }
    }
}
