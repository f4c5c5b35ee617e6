internal import CLinux
import Dispatch
import Locking
import MobiusCore
import NetdevSession
import NetdevWire
import Netlink
public import Syslog
import SystemSupport
public import Systemd
public import Udev
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's settings, from the command line.
public struct DaemonOptions: Sendable {
    /// The main configuration file (drop-ins are read from `<file>.d/`).
    public var configurationFile = "/etc/netdevd/netdevd.conf"
    /// The control socket's path (used by the control plane).
    public var socketPath = "/run/netdevd/io.netdevd"
    /// Which udev source to monitor.
    public var udevSource: UdevSource = .auto
    /// Where log entries go; `nil` chooses (journal if its socket exists, else the console).
    public var logTarget: JournalTarget?
    /// The least urgent journal priority written (`.debug` writes every entry).
    public var maximumPriority = LogPriority.info
    /// A file to append every processed event to, as JSON lines, for replay.
    public var recordFile: String?
    /// The hook directories, highest priority first.
    public var hookDirectories = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"]
    /// The monitors' receive buffer in bytes (large by default, so floods rarely overflow; tests make it small).
    public var receiveBufferBytes = 128 * 1024 * 1024
    /// How long a hook has between SIGTERM and SIGKILL.
    public var hookKillGraceMilliseconds = 5_000
    /// Where the hook runner is: the process that starts hooks (by default a child of netdevd's own).
    public var hookRunner = HookRunnerEndpoint.inProcess
    /// Replies a control client may leave unread before it is cut off, in bytes.
    public var monitorBufferBytes = 4 << 20

    /// The defaults.
    public init() {}
}

/// netdevd: a MobiusController running the session, fed by the udev monitor, the rtnetlink watcher, signals and
/// the watchdog, with effect handlers for enumeration, the journal, notifications, configuration, hooks, timers and
/// exit. One serial queue is the event loop; blocking work (dumps, configuration files, journal writes) runs
/// elsewhere, and no hook is ever waited for.
public final class Daemon: Sendable {
    let options: DaemonOptions
    private let journal: Journal
    private let serviceNotifications = ServiceNotifications()
    /// The loop's queue: the main queue, whose thread serves the ``Poller`` and runs the loop, so a kernel
    /// message reaches the session's update with no thread woken; a queue of its own when the poller's thread
    /// runs already (never in netdevd itself, which makes its daemon first).
    private let loopQueue: DispatchQueue
    private let loopOnMainThread: Bool
    // Serial queues only: they run on libdispatch's overcommit threads. A concurrent or global queue starts its
    // workqueue monitor, a timer that wakes netdevd every second for as long as it runs.
    private let ioQueue = DispatchQueue(label: "netdevd.io")
    private let signalQueue = DispatchQueue(label: "netdevd.signals")
    private let exitStatus = Locked<Int32?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    /// Journal writes that failed since the last one that did not, the last failure's reason, and whether any
    /// failure was reported on standard error yet.
    private let journalFailures = Locked((lost: 0, reason: "", warned: false))

    /// A daemon with `options`; nothing starts until ``run()``.
    public init(options: DaemonOptions) {
        self.options = options
        // Before the poller's epoll descriptor: it must not take the number of a closed standard descriptor.
        ProcessSetup.prepare()
        loopOnMainThread = Poller.shared?.claimMainThread() ?? false
        loopQueue = loopOnMainThread ? DispatchQueue.main : DispatchQueue(label: "netdevd.loop")
        self.journal = Journal(identifier: "netdevd", target: options.logTarget)
    }

    /// The exit status of a start refused for a configuration that cannot be read (sysexits' EX_CONFIG, which
    /// systemd shows as `status=78/CONFIG`); the unit's `RestartPreventExitStatus=` keeps systemd from retrying.
    public static let configurationUnreadable: Int32 = 78

    /// Runs until the session exits; returns the exit status. Start-up problems (no netlink socket) are logged
    /// and give status 1; a configuration that cannot be read, ``configurationUnreadable``. Call it before starting
    /// any thread: it blocks the signals the loop handles (see ``ProcessSetup``), and a thread started earlier would
    /// still take them with the default action.
    public func run() -> Int32 {
        ProcessSetup.prepare()
        // One malloc arena: glibc gives each thread that contends for the heap an arena of its own, and after a
        // burst each holds its fragments (the RSS then stays far above what the model needs). netdevd's threads
        // allocate little at a time, so sharing one costs nothing measurable.
        mallopt(M_ARENA_MAX, 1)
        let configuration: Configuration
        switch ConfigurationLoader(mainFile: options.configurationFile).load() {
        case .loaded(let loaded, let warnings):
            configuration = loaded
            for warning in warnings { log(.warning, warning.description) }
        case .rejected(let errors):
            for error in errors { log(.error, error.description) }
            log(
                .error,
                "netdevd cannot start: its configuration cannot be read (above); fix it, check it with "
                    + "'netdevd --check-config', then start netdevd again (systemd does not retry: exit 78)")
            return Self.configurationUnreadable
        }

        // One look at udevd decides `auto` and what the start says about it.
        let udevd = UdevdStatus.probe()
        let source = options.udevSource == .auto ? (udevd == .running ? .udev : .kernel) : options.udevSource
        let monitor: UdevMonitor
        let watcher: RouteWatcher
        do {
            // Only the tracked subsystems' uevents reach netdevd (a socket filter); a reload that changes them
            // changes the filter before it re-enumerates.
            monitor = try UdevMonitor(
                source: source, subsystems: configuration.trackedSubsystems,
                receiveBufferBytes: Int32(clamping: options.receiveBufferBytes))
            watcher = try RouteWatcher(receiveBufferBytes: options.receiveBufferBytes)
        } catch {
            log(.error, "netdevd cannot start: \(error)")
            return 1
        }
        var sourceNote = ""
        if options.udevSource == .auto, monitor.source == .kernel, case .notRunning(let reason) = udevd {
            sourceNote =
                " (auto: udevd is not running, \(reason); raw kernel uevents without udev's properties until it starts)"
        }
        log(.info, "Monitoring udev source '\(monitor.source.rawValue)'\(sourceNote) and rtnetlink")
        if options.udevSource == .udev, case .notRunning(let reason) = udevd {
            log(.warning, DeviceEventSource.udevdAbsent(reason: reason))
        }
        if !monitor.receiveBufferRaised {
            // Unreadable in some sandboxes (ProcSubset=pid): then the value is left out, not shown as "?".
            let limit: String
            switch TextFile.bytes(at: "/proc/sys/net/core/rmem_max", limit: 64) {
            case .success(let bytes): limit = "=" + String(decoding: bytes, as: UTF8.self).trimmed
            case .failure: limit = ""
            }
            log(
                .info,
                "Receive buffers stay at the kernel's limit (net.core.rmem_max\(limit), doubled) instead of "
                    + "\(options.receiveBufferBytes) bytes: raising them needs CAP_NET_ADMIN. A burst larger than "
                    + "that is survived by re-reading the state; raise net.core.rmem_max to avoid it")
        }

        let journalQueue = JournalQueue { [weak self] item, names in
            switch item {
            case .session(let entry): self?.write(entry, names: names)
            case .made(let entry): self?.send(entry)
            }
        }
        // The monitors read on the loop queue: what they report goes through the journal's queue, never a
        // blocking send from the loop.
        let maximumPriority = options.maximumPriority
        /// An entry through the journal's queue, if its priority is written at all: for everything that reports
        /// from a queue that must not block (the loop's, the server's, the metrics writer's).
        let queued: @Sendable (LogPriority, String) -> Void = { priority, text in
            if priority <= maximumPriority {
                journalQueue.append(JournalEntry(message: text, priority: priority))
            }
        }
        let problem: SourceProblem = { text in queued(.warning, text) }
        let trim = MemoryTrim(queue: loopQueue)
        let devices = DeviceEventSource(
            monitor: monitor, follow: options.udevSource == .auto, udevdRunning: udevd == .running, queue: loopQueue,
            trim: trim, problem: problem, say: queued)
        var sources = CompositeEventSourceBuilder<Event>()
            // Read on the loop's queue: reading is quick and non-blocking, and an event read there reaches update
            // without waking another thread.
            .addEventSource(devices)
            .addEventSource(
                ReadableEventSource.netlink(
                    watcher, queue: loopQueue, trim: trim, problem: problem,
                    linksAnnounced: { devices.kernelAnnouncedLinks() })
            )
            .addEventSource(SignalEventSource(queue: signalQueue))
        if let interval = ServiceNotifier.watchdogInterval() {
            sources = sources.addEventSource(WatchdogEventSource(intervalMicroseconds: interval, queue: signalQueue))
        }
        // A hook's output goes through the same queue as the session's entries, so it follows the entry about the
        // change that ran the hook.
        let hooks = HookRunner(
            directories: options.hookDirectories, killGrace: .milliseconds(options.hookKillGraceMilliseconds),
            target: loopQueue, runner: options.hookRunner, log: { entry in journalQueue.append(entry) })
        let timers = Timers(queue: signalQueue)
        // Metrics: counted as the loop goes (an increment per event, an entry per link change), rendered only for
        // `[Metrics] TextfileDirectory=` and `netdevctl metrics`.
        let recorder = MetricsRecorder()
        let exporter = MetricsExporter(recorder: recorder, version: Self.version)
        let effects = EffectHandlers(
            daemon: self, monitor: monitor, hooks: hooks, timers: timers, journal: journalQueue, ioQueue: ioQueue,
            metrics: recorder)
        let update = Update<Model, Event, Effect> { model, event in
            recorder.noteEvent()
            return Session.update(model, event)
        }
        var builder = Mobius.loop(update: update, effectHandler: effects.router.asConnectable)
            .withEventSource(sources.build())
        let eventRecorder = options.recordFile.flatMap(EventRecorder.init(path:))
        if let eventRecorder {
            builder = builder.withLogger(eventRecorder)
        }
        let controller = builder.makeController(
            from: Model(configuration: configuration, maximumLogPriority: options.maximumPriority),
            initiate: Session.initiate,
            loopQueue: loopQueue,
            // The control service takes a model in a few instructions and encodes for monitors on a queue of its
            // own, so it can watch from the loop's queue without a thread hop per model.
            viewQueue: loopQueue
        )
        let server = Locked<VarlinkServer?>(nil)
        let clients: @Sendable () -> Int = { server.withLock { $0?.connectionCount } ?? 0 }
        let control = ControlService(
            metrics: { model in exporter.render(model, clients: clients()) }, hookCounts: { hooks.counts() }
        ) { text in
            queued(.warning, text)
        }
        controller.connectView(control.view)
        let textfile = MetricsTextfile(exporter: exporter, clients: clients) { priority, text in
            queued(priority, text)
        }
        recorder.onChange { textfile.poke() }
        controller.connectView(textfile.view)
        let started = startControlServer(control) { notice in
            let priority: LogPriority =
                switch notice.severity {
                case .error: .error
                case .warning: .warning
                case .info: .info
                }
            queued(priority, notice.message)
        }
        server.withLock { $0 = started }
        controller.start()
        #if DEBUG
        // Test builds only: SIGUSR1 blocks the loop queue for 3 s, so a test can see the watchdog pings stop.
        let blocker =
            getenv("NETDEVD_TEST_BLOCK_LOOP_ON_SIGUSR1").map { String(cString: $0) } == "1"
            ? blockLoopOnSIGUSR1() : nil
        defer { blocker?.cancel() }
        #endif
        if loopOnMainThread {
            let served = Poller.shared?.runOnMainThread(mainQueue: loopQueue) { exitStatus.withLock { $0 != nil } }
            if served != true {
                log(
                    .error, "netdevd cannot run its event loop: the kernel refused to watch the main queue's descriptor"
                )
                return 1
            }
            // What the loop queued before it stopped (and what that queues in turn), as its own queue would run it.
            Poller.drainMainQueue()
        } else {
            finished.wait()
        }
        // A stopped netdevd's last state must not go on being reported as current; removed before the drain, so what
        // the removal has to say reaches the journal.
        textfile.stop()
        // The last journal entries ("netdevd stopped") and STOPPING=1 were queued for the journal's writer thread and
        // the notification queue before the exit effect: let them out now, while the effect handlers are still
        // connected (stopping the controller disconnects them, and work still queued is then dropped).
        effects.drain()
        started?.stop()
        controller.stop()
        if loopOnMainThread { Poller.drainMainQueue() }
        timers.cancelAll()
        // Hooks the stop timeout cut short got SIGKILL already; leftovers of hooks within their grace get it now.
        hooks.killAll()
        eventRecorder?.flush()
        return exitStatus.withLock { $0 } ?? 0
    }

    /// netdevd's version, as `org.varlink.service.GetInfo` and `netdevd_build_info` report it.
    public static let version = "0.1.0"

    /// Serves `io.netdevd` on the socket systemd passed (socket activation) or on `options.socketPath`. A failure
    /// is logged and netdevd goes on without a control socket.
    private func startControlServer(
        _ control: ControlService, notify: @escaping @Sendable (VarlinkNotice) -> Void
    ) -> VarlinkServer? {
        let listening: Int32
        if let passed = ListenFDs.take().first {
            listening = passed.fileDescriptor
            log(.info, "Serving io.netdevd on the socket systemd passed (\(passed.name))")
        } else {
            let directory = Paths.directory(of: options.socketPath)
            if let problem = Paths.makeDirectories(directory) {
                log(.warning, "No control socket, netdevctl cannot reach this netdevd: \(problem)")
                return nil
            }
            do {
                listening = try VarlinkServer.listen(on: options.socketPath)
                log(.info, "Serving io.netdevd on \(options.socketPath)")
            } catch {
                log(.warning, "No control socket, netdevctl cannot reach this netdevd: \(error)")
                return nil
            }
        }
        var limits = VarlinkLimits()
        limits.maximumPendingOutputBytes = options.monitorBufferBytes
        let server = VarlinkServer(
            listening: listening, interfaces: [control.interface], vendor: "netdevd", product: "netdevd",
            version: Self.version, url: "", limits: limits, notify: notify)
        server.start()
        return server
    }

    #if DEBUG
    private func blockLoopOnSIGUSR1() -> DispatchSourceHandle {
        signal(SIGUSR1, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: signalQueue)
        let loopQueue = self.loopQueue
        source.setEventHandler { loopQueue.async { sleep(3) } }
        source.resume()
        return DispatchSourceHandle(source)
    }
    #endif

    /// Ends ``run()`` with `status`.
    func exit(status: Int32) {
        let first = exitStatus.withLock { current -> Bool in
            guard current == nil else { return false }
            current = status
            return true
        }
        if first {
            finished.signal()
            // Wakes the main thread, which then sees the status (see run()).
            if loopOnMainThread { loopQueue.async {} }
        }
    }

    /// Writes a session log entry.
    func write(_ entry: LogEntry, names: JournalFieldNames) {
        guard let id = names.messageID(entry.kind.id) else { return }
        var journalEntry = JournalEntry(message: entry.message, priority: entry.priority, messageID: id)
        for field in entry.fields {
            journalEntry.append(names.name(field.name), field.value)
        }
        send(journalEntry)
    }

    /// Writes `entry`. The first failure ever is reported on standard error (later ones are not, so a broken
    /// journal does not flood the console); entries that fail are counted, and the first entry the journal takes
    /// again is followed by a warning saying how many were lost and why (journald restarted, say).
    func send(_ entry: JournalEntry) {
        do {
            try journal.send(entry)
        } catch {
            let first = journalFailures.withLock { state -> Bool in
                state.lost += 1
                state.reason = "\(error)"
                defer { state.warned = true }
                return !state.warned
            }
            if first {
                writeToStandardError("netdevd: \(error); further journal failures are not reported\n")
            }
            return
        }
        let lost = journalFailures.withLock { state -> (count: Int, reason: String)? in
            guard state.lost > 0 else { return nil }
            defer { state.lost = 0 }
            return (state.lost, state.reason)
        }
        guard let lost else { return }
        let warning = JournalEntry(
            message: "\(lost.count) journal entries were lost while the journal took none (\(lost.reason)). netdevd's "
                + "state is unaffected: netdevctl shows it",
            priority: .warning)
        do {
            try journal.send(warning)
        } catch {
            journalFailures.withLock { $0.lost += lost.count + 1 }
        }
    }

    /// Writes a daemon message that is not a session entry.
    func log(_ priority: LogPriority, _ message: String) {
        guard priority <= options.maximumPriority else { return }
        send(JournalEntry(message: message, priority: priority))
    }

    /// Tells the service manager `notifications` (see ``ServiceNotifications``).
    func notify(_ notifications: [NetdevSession.Notification]) {
        serviceNotifications.send(notifications, log: log)
    }
}
