internal import CLinux
import JSONCoding
import NetdevSession
import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// Batch hooks: executables in `batch.d` beside the hook directories (`/etc/netdevd/batch.d`,
/// `/usr/lib/netdevd/batch.d`; same ownership rules, override and mask), for hosts with thousands of links. They do
/// not run per event: one run gets every event that came since the last one began, as JSON lines on its standard
/// input (one object per event, its keys and values the environment a hook of that event gets, `NETDEVD_JSON`
/// included as a string), with `batch COUNT` as arguments and `NETDEVD_EVENT=batch`, `NETDEVD_BATCH_EVENTS=COUNT`
/// in its environment. The next run starts only after every batch hook of the last one ended, with the events
/// that came meanwhile: each event reaches exactly one run of each batch hook.
///
/// The input is a memory file, not a pipe: a batch hook that never reads it blocks nobody. At most
/// ``maximumBytes`` of events wait for a run; those beyond are dropped, counted and said. A run that fails or times
/// out is said with the number of events it held.
///
/// `@unchecked Sendable`: every property is read and written only on the hook runner's queue.
final class HookBatches: @unchecked Sendable {
    /// The event name of a batch run (its arguments' first, and the runner's directory set).
    static let event = "batch"
    /// The most event bytes that wait for a run.
    static let maximumBytes = 16 << 20

    private var lines: [[UInt8]] = []
    private var bytes = 0
    private var dropped = 0
    private var running = false
    private var scheduled = false
    private var timeoutMilliseconds = 30_000

    /// Queues `run`'s event for the batch hooks, if there are any, and starts a batch unless one runs. On the
    /// runner's queue.
    func add(_ run: HookRun, timeoutMilliseconds: Int, runner: HookRunner) {
        guard !runner.catalog.batchHooks().isEmpty else { return }
        self.timeoutMilliseconds = timeoutMilliseconds
        var object = ["NETDEVD_EVENT": run.event.rawValue]
        for assignment in HookRunner.environment(for: run) {
            guard let equals = assignment.firstIndex(of: "=") else { continue }
            object[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
        }
        var line: [UInt8]
        do {
            line = try JSONTextEncoder().encode(object)
        } catch {
            // Strings only: the encoder fails on nothing here, but an event lost must still be said.
            runner.log(
                JournalEntry(message: "An event was not given to the batch hooks: \(error)", priority: .warning))
            return
        }
        line.append(UInt8(ascii: "\n"))
        guard bytes + line.count <= Self.maximumBytes else {
            dropped += 1
            return
        }
        lines.append(line)
        bytes += line.count
        schedule(runner)
    }

    /// A batch starts after the work queued now: the events of one pass of the loop go into one run.
    private func schedule(_ runner: HookRunner) {
        guard !running, !scheduled else { return }
        scheduled = true
        runner.queue.async { [self] in startNext(runner) }
    }

    private func startNext(_ runner: HookRunner) {
        scheduled = false
        guard !running, !lines.isEmpty else { return }
        let hooks = runner.catalog.batchHooks()
        if hooks.isEmpty {
            runner.log(
                JournalEntry(
                    message:
                        "Dropped \(quantity(lines.count, "event")) for the batch hooks: batch.d holds none any more",
                    priority: .warning))
        }
        let count = lines.count
        // One memory file for the whole batch, written from the lines as they are (no joined copy); each batch hook
        // reads it from its start (``runHook(_:at:input:count:runner:)``).
        let input = Self.memoryFile(lines)
        let failure = errno
        lines = []
        bytes = 0
        if dropped > 0 {
            runner.log(
                JournalEntry(
                    message:
                        "Dropped \(quantity(dropped, "event")) for the batch hooks: more than \(Self.maximumBytes >> 20) "
                        + "MiB of events waited while the last batch ran",
                    priority: .warning))
            dropped = 0
        }
        guard input >= 0 else {
            for hook in hooks {
                say(
                    hook.name, "was not started (its input: \(String(cString: strerror(failure))))", count: count,
                    runner: runner)
            }
            return
        }
        running = true
        runHook(hooks, at: 0, input: input, count: count, runner: runner)
    }

    /// Runs `hooks[index...]` one after another on the batch's memory file, then closes it and starts the next
    /// batch. The runner receives the same open file for each hook, and the hooks run one at a time: the offset is
    /// reset before each, so each reads every event.
    private func runHook(_ hooks: [HookFile], at start: Int, input: Int32, count: Int, runner: HookRunner) {
        var index = start
        while index < hooks.count {
            let hook = hooks[index]
            index += 1
            if let refusal = hook.refusal {
                say(hook.name, "was not started (\(refusal))", count: count, runner: runner)
                continue
            }
            lseek(input, 0, SEEK_SET)
            var launched = false
            let next = index
            let id = runner.connection.launch(
                hook, event: Self.event, arguments: [Self.event, String(count)],
                environment: ["NETDEVD_EVENT=\(Self.event)", "NETDEVD_BATCH_EVENTS=\(count)"], input: input,
                timeoutMilliseconds: timeoutMilliseconds, killGraceMilliseconds: runner.killGraceMilliseconds
            ) { [self] outcome, _ in
                report(outcome, count: count, runner: runner)
                if launched { runHook(hooks, at: next, input: input, count: count, runner: runner) }
            }
            launched = id != nil
            if launched { return }
        }
        close(input)
        running = false
        if !lines.isEmpty { schedule(runner) }
    }

    /// The hook's output under its name, and a failure with the number of events it held.
    private func report(_ outcome: HookOutcome, count: Int, runner: HookRunner) {
        if !outcome.outputTail.isEmpty {
            var entry = JournalEntry(
                message: outcome.outputTail, priority: outcome.status == .exited(0) ? .info : .warning)
            entry.append(.syslogIdentifier, outcome.name)
            entry.append(.normalizing("NETDEVD_HOOK_EVENT"), Self.event)
            runner.log(entry)
        }
        switch outcome.status {
        case .exited(0): break
        case .exited(let code): say(outcome.name, "exited with status \(code)", count: count, runner: runner)
        case .killed(let signal): say(outcome.name, "was killed by signal \(signal)", count: count, runner: runner)
        case .timedOut: say(outcome.name, "timed out", count: count, runner: runner)
        case .notStarted(let reason): say(outcome.name, "was not started (\(reason))", count: count, runner: runner)
        case .lost(let reason): say(outcome.name, "was lost (\(reason))", count: count, runner: runner)
        }
    }

    private func say(_ name: String, _ what: String, count: Int, runner: HookRunner) {
        var entry = JournalEntry(
            message: "Batch hook \(name) \(what); it held \(quantity(count, "event"))", priority: .warning)
        entry.append(.normalizing("NETDEVD_HOOK"), name)
        entry.append(.normalizing("NETDEVD_HOOK_EVENT"), Self.event)
        runner.log(entry)
    }

    /// A memory file holding `lines`, one after another; -1 (errno set) when it cannot be made.
    private static func memoryFile(_ lines: [[UInt8]]) -> Int32 {
        let descriptor = netdevd_memfd("netdevd-batch")
        guard descriptor >= 0 else { return -1 }
        for line in lines {
            var written = 0
            while written < line.count {
                let count = line.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    let failure = errno
                    close(descriptor)
                    errno = failure
                    return -1
                }
                written += count
            }
        }
        return descriptor
    }
}
