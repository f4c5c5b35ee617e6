import Dispatch
import Locking
import MobiusCore
import NetdevSession
import Syslog
import Systemd
import Varlink

/// Everything a running netdevd is made of, wired together: the event sources, the loop and its effect handlers,
/// the hook runner, the control service and socket, the metrics. Made by ``Daemon/run()`` once the configuration is
/// read and the kernel monitors are open; ``start()`` starts the loop and serves, ``stop(loopOnMainThread:)`` takes
/// it apart in the order that loses nothing.
final class DaemonParts: Sendable {
    // Serial queues only: they run on libdispatch's overcommit threads. A concurrent or global queue starts its
    // workqueue monitor, a timer that wakes netdevd every second for as long as it runs.
    let signalQueue = DispatchQueue(label: "netdevd.signals")
    private let controller: MobiusController<Model, Event, Effect>
    private let effects: EffectHandlers
    private let control: ControlService
    private let textfile: MetricsTextfile
    private let hooks: HookRunner
    private let timers: Timers
    private let eventRecorder: EventRecorder?
    private let journal: JournalSink
    private let options: DaemonOptions
    /// Gives a burst's memory back once netdevd is quiet: after the kernel's last message, the monitors' last batch
    /// of changes, or the last backlog of replies a slow client read (the monitors' queue and its clients can still
    /// be busy with a burst's changes a while after the kernel's messages stopped).
    private let trim: MemoryTrim
    private let server = Locked<VarlinkServer?>(nil)

    init(
        options: DaemonOptions, configuration: Configuration, kernel: KernelMonitors, journal: JournalSink,
        loopQueue: DispatchQueue, exit: @escaping @Sendable (Int32) -> Void
    ) {
        self.options = options
        self.journal = journal
        let problem: SourceProblem = { text in journal.post(.warning, text) }
        let trim = MemoryTrim(queue: loopQueue)
        self.trim = trim
        let devices = DeviceEventSource(
            monitor: kernel.udev, follow: options.udevSource == .auto, udevdRunning: kernel.udevdRunning,
            queue: loopQueue, trim: trim, problem: problem, say: journal.post)
        var sources = CompositeEventSourceBuilder<Event>()
            // Read on the loop's queue: reading is quick and non-blocking, and an event read there reaches update
            // without waking another thread.
            .addEventSource(devices)
            .addEventSource(
                ReadableEventSource.netlink(
                    kernel.rtnetlink, queue: loopQueue, trim: trim, problem: problem,
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
            target: loopQueue, runner: options.hookRunner, log: { entry in journal.queue.append(entry) })
        self.hooks = hooks
        let hookPresence = HookPresenceSource(runner: hooks, queue: loopQueue)
        sources = sources.addEventSource(hookPresence)
        timers = Timers(queue: signalQueue)
        // Metrics: counted as the loop goes (the session's activity, each hook run's end, an increment per event),
        // rendered only for `[Metrics] TextfileDirectory=` and `netdevctl metrics`.
        let recorder = MetricsRecorder()
        let exporter = MetricsExporter(recorder: recorder, version: Daemon.version)
        effects = EffectHandlers(
            configurationFile: options.configurationFile, monitor: kernel.udev, hooks: hooks,
            hookPresence: hookPresence, timers: timers, journal: journal, metrics: recorder, exit: exit)
        let update = Update<Model, Event, Effect> { model, event in
            recorder.noteEvent()
            return Session.update(model, event)
        }
        var builder = Mobius.loop(update: update, effectHandler: effects.router.asConnectable)
            .withEventSource(sources.build())
        eventRecorder = options.recordFile.flatMap(EventRecorder.init(path:))
        if let eventRecorder {
            builder = builder.withLogger(eventRecorder)
        }
        controller = builder.makeController(
            from: Model(configuration: configuration, maximumLogPriority: options.maximumPriority),
            initiate: Session.initiate,
            loopQueue: loopQueue,
            // The control service takes a model in a few instructions and encodes for monitors on a queue of its
            // own, so it can watch from the loop's queue without a thread hop per model.
            viewQueue: loopQueue
        )
        let server = server
        let clients: @Sendable () -> Int = { server.withLock { $0?.connectionCount } ?? 0 }
        control = ControlService(
            metricsReply: { model, reply in exporter.replyParameters(model, clients: clients(), into: &reply) },
            hookCounts: { hooks.counts() },
            refused: { text in journal.post(.warning, text) },
            batchSent: { [trim] in trim.noteActivityElsewhere() }, loopQueue: loopQueue)
        controller.connectView(control.view)
        textfile = MetricsTextfile(exporter: exporter, clients: clients, log: journal.post)
        recorder.onChange { [textfile] in textfile.poke() }
        controller.connectView(textfile.view)
    }

    /// Opens the control socket and starts the loop (which initiates the session: enumeration, then READY=1).
    func start() {
        let started = ControlSocket.serve(
            control, options: options, say: journal.say, drained: { [trim] in trim.noteActivityElsewhere() }
        ) { [journal] notice in
            let priority: LogPriority =
                switch notice.severity {
                case .error: .error
                case .warning: .warning
                case .info: .info
                }
            journal.post(priority, notice.message)
        }
        server.withLock { $0 = started }
        controller.start()
    }

    /// Stops everything once the session exited: the metrics file goes, what was queued for the journal and the
    /// service manager is sent, the socket closes, the loop stops, timers and leftover hooks are ended.
    func stop(loopOnMainThread: Bool) {
        // A stopped netdevd's last state must not go on being reported as current; removed before the drain, so what
        // the removal has to say reaches the journal.
        textfile.stop()
        // The last journal entries ("netdevd stopped") and STOPPING=1 were queued for the journal's writer thread and
        // the notification queue before the exit effect: let them out now, while the effect handlers are still
        // connected (stopping the controller disconnects them, and work still queued is then dropped).
        effects.drain()
        server.withLock { $0 }?.stop()
        controller.stop()
        if loopOnMainThread { Poller.drainMainQueue() }
        timers.cancelAll()
        // Hooks the stop timeout cut short got SIGKILL already; leftovers of hooks within their grace get it now.
        hooks.killAll()
        eventRecorder?.flush()
    }
}
