import Dispatch
import NetdevSession
import Systemd

/// Runs networkd-dispatcher's scripts (``DispatcherRun``) through the hook runner, as networkd-dispatcher 2.2 runs
/// them: each state's scripts one after another in order (``DispatcherScripts``), no arguments, its environment
/// (``DispatcherEnvironment``), and a warning for a script that exits with another status than 0.
///
/// A link's runs go in the order the session made them, one at a time, and none is merged or dropped; up to the
/// run's `parallelism` links run at once (networkd-dispatcher runs one script at a time for the whole host). Each
/// script may run the configured hook timeout, then gets SIGTERM and SIGKILL like a hook (networkd-dispatcher waits
/// for ever). A script's output goes to the journal under the script's name.
///
/// `@unchecked Sendable`: every property is read and written only on the hook runner's queue.
final class NetworkdDispatcher: @unchecked Sendable {
    /// The event name of a script's start, before its state: the hook runner checks the script against that state.
    static let eventPrefix = "networkd-dispatcher/"

    private let runner: HookRunner
    /// The state directories' listings, reused while they do not change.
    private let listings = DispatcherScriptListings()
    /// Each link's runs not yet started, oldest first.
    private var waiting: [Int32: [DispatcherRun]] = [:]
    /// Links with runs waiting and none running, in the order they became so, from `readyStart` on (taken from the
    /// front without moving the rest: a burst queues thousands).
    private var ready: [Int32] = []
    private var readyStart = 0
    /// Links running a run now.
    private var running: Set<Int32> = []
    /// The refusals said already, by path and reason (each is said once).
    private var refusalsSaid: Set<String> = []
    /// Runs waiting, across links; at most ``maximumWaiting`` (a script that hangs while links keep changing must
    /// not grow netdevd without bound): more are dropped, counted and said.
    private var waitingCount = 0
    static let maximumWaiting = 100_000
    private var droppedSinceSaid = 0

    init(runner: HookRunner) {
        self.runner = runner
    }

    /// Queues `run` behind its link's earlier runs.
    func dispatch(_ run: DispatcherRun) {
        runner.connection.inProcessDispatcherDirectories.withLock { $0 = run.directories }
        runner.queue.async { [self] in
            let index = run.link.index
            guard waitingCount < Self.maximumWaiting else {
                droppedSinceSaid += 1
                if droppedSinceSaid == 1 {
                    runner.log(
                        JournalEntry(
                            message:
                                "More than \(Self.maximumWaiting) networkd-dispatcher runs wait (scripts run slower than "
                                + "links change): new ones are dropped until the queue drains, and counted",
                            priority: .warning))
                }
                return
            }
            waitingCount += 1
            waiting[index, default: []].append(run)
            if !running.contains(index) && waiting[index]?.count == 1 { ready.append(index) }
            startReady(parallelism: run.parallelism)
        }
    }

    private func startReady(parallelism: Int) {
        while running.count < max(parallelism, 1), readyStart < ready.count {
            let index = ready[readyStart]
            readyStart += 1
            if readyStart >= 1024 && readyStart * 2 >= ready.count {
                ready.removeFirst(readyStart)
                readyStart = 0
            }
            guard var runs = waiting[index], !runs.isEmpty else { continue }
            let run = runs.removeFirst()
            waiting[index] = runs.isEmpty ? nil : runs
            waitingCount -= 1
            if droppedSinceSaid > 0 && waitingCount == 0 {
                runner.log(
                    JournalEntry(
                        message: "Dropped \(droppedSinceSaid) networkd-dispatcher runs while the queue was full",
                        priority: .warning))
                droppedSinceSaid = 0
            }
            running.insert(index)
            let listing = listings.scripts(of: run.state, in: run.directories)
            say(listing.refused)
            runScripts(listing.scripts[...], of: run) { [self] in
                running.remove(index)
                if waiting[index] != nil { ready.append(index) }
                startReady(parallelism: run.parallelism)
            }
        }
    }

    private func runScripts(_ scripts: ArraySlice<String>, of run: DispatcherRun, done: @escaping () -> Void) {
        guard let path = scripts.first else { return done() }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let hook = HookFile(name: name, path: path, refusal: nil)
        var handedOver = false
        let id = runner.connection.launch(
            hook, event: Self.eventPrefix + run.state, arguments: [],
            environment: DispatcherEnvironment.variables(for: run), timeoutMilliseconds: run.timeoutMilliseconds,
            killGraceMilliseconds: runner.killGraceMilliseconds
        ) { [self] outcome, _ in
            report(outcome, path: path, run: run)
            // A launch that could not be handed over ends within the call: the next script starts after it returns.
            if handedOver { runScripts(scripts.dropFirst(), of: run, done: done) }
        }
        handedOver = id != nil
        if !handedOver { runScripts(scripts.dropFirst(), of: run, done: done) }
    }

    private func report(_ outcome: HookOutcome, path: String, run: DispatcherRun) {
        if !outcome.outputTail.isEmpty {
            var entry = JournalEntry(
                message: outcome.outputTail, priority: outcome.status == .exited(0) ? .info : .warning)
            entry.append(.syslogIdentifier, outcome.name)
            entry.append(.normalizing("NETDEVD_HOOK_EVENT"), Self.eventPrefix + run.state)
            entry.append(.normalizing("NETDEVD_IFNAME"), run.link.name)
            runner.log(entry)
        }
        guard outcome.status != .exited(0) else { return }
        var entry = JournalEntry(
            message:
                "networkd-dispatcher script \(path) (\(run.link.name) entering \(run.state)) \(outcome.status.summary)",
            priority: .warning)
        entry.append(.normalizing("NETDEVD_HOOK"), outcome.name)
        entry.append(.normalizing("NETDEVD_HOOK_EVENT"), Self.eventPrefix + run.state)
        entry.append(.normalizing("NETDEVD_IFNAME"), run.link.name)
        runner.log(entry)
    }

    /// Each refused file or directory, with the reason, once per path and reason.
    private func say(_ refused: [(path: String, reason: String)]) {
        for (path, reason) in refused where refusalsSaid.insert(path + "\n" + reason).inserted {
            var entry = JournalEntry(
                message: "networkd-dispatcher script \(path) is not run: \(reason)", priority: .error)
            entry.append(.normalizing("NETDEVD_HOOK_PATH"), path)
            runner.log(entry)
        }
    }
}
