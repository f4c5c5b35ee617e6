import Dispatch
import Locking
import MobiusCore
import NetdevSession
import Netlink
import Syslog
import SystemSupport
import Udev

/// The session's effects, carried out: an ``EffectRouter`` with one route per kind of effect. Blocking work
/// (dumps, enumeration, configuration files) runs on the I/O queue; hooks are started and supervised on the runner's
/// queue, which never waits for a hook.
struct EffectHandlers: Sendable {
    let router: EffectRouter<Effect, Event>
    private let notifyQueue = DispatchQueue(label: "netdevd.notify")
    private let journal: JournalSink

    /// Waits until every journal entry and notification queued so far has been sent.
    func drain() {
        journal.queue.drain()
        notifyQueue.sync {}
    }

    /// Handlers reading `configurationFile` (and asking `hookPresence` to look at the hook directories again),
    /// filtering `monitor`, starting `hooks`, running `timers`, writing to `journal`, counting in `metrics`, and ending
    /// the daemon with `exit`.
    init(
        configurationFile: String, monitor: UdevMonitor, hooks: HookRunner, hookPresence: HookPresenceSource,
        timers: Timers, journal: JournalSink, metrics: MetricsRecorder, exit: @escaping @Sendable (Int32) -> Void
    ) {
        let notifyQueue = notifyQueue
        let ioQueue = DispatchQueue(label: "netdevd.io")
        let serviceNotifications = ServiceNotifications()
        self.journal = journal
        let timerConnection = AnyConnectable<(TimerID, milliseconds: Int), Event> { consumer in
            Connection(
                acceptClosure: { timer in
                    timers.start(timer.0, milliseconds: timer.milliseconds) { fired in consumer(.timerFired(fired)) }
                },
                disposeClosure: { timers.cancelAll() }
            )
        }
        let dispatcher = NetworkdDispatcher(runner: hooks)
        let networkdQueue = DispatchQueue(label: "netdevd.networkd-states")
        let networkdStates = AnyConnectable<Bool, Event> { consumer in
            let watcher = NetworkdStateWatcher(
                queue: networkdQueue, problem: { text in journal.say(.warning, text) }, send: { consumer($0) })
            return Connection(
                acceptClosure: { on in networkdQueue.async { on ? watcher.start() : watcher.stop() } },
                disposeClosure: { networkdQueue.async { watcher.stop() } }
            )
        }
        router = EffectRouter<Effect, Event>()
            .routeEffects(withParameters: \.enumeration).on(queue: ioQueue).toEvent { generation, subsystems in
                // The monitor's filter first, so no uevent of a newly tracked subsystem falls between the two.
                do {
                    try monitor.filter(subsystems: subsystems)
                } catch {
                    journal.say(.warning, "The udev monitor keeps its old subsystem filter: \(error)")
                }
                return Self.enumerate(generation: generation, subsystems: subsystems)
            }
            // The journal on its own queue too: a send blocks while journald's socket is full.
            // The session made only the entries the journal's level keeps.
            .routeEffects(withParameters: \.logEntry).to { entry in journal.queue.append(entry) }
            .routeEffects(withParameters: \.activity).to { activity in metrics.note(activity) }
            // Its own serial queue: a notification waits up to 5 s while the manager's queue is full; the loop must not.
            .routeEffects(withParameters: \.notifications).on(queue: notifyQueue).to { notifications in
                // Said at once: this queue may block, and what it says must not wait behind the stop's drain.
                serviceNotifications.send(notifications, log: journal.say)
            }
            .routeEffects(equalTo: .loadConfiguration).on(queue: ioQueue).toEvent { _ in
                // A reload also sees what inotify cannot tell of the hook directories (a parent replaced).
                hookPresence.recheck()
                return switch ConfigurationLoader(mainFile: configurationFile).load() {
                case .loaded(let configuration, let warnings): .configurationLoaded(configuration, warnings: warnings)
                case .rejected(let errors): .configurationRejected(errors)
                }
            }
            .routeEffects(withParameters: \.hookRun).to { run, callback in
                hooks.start(run, timeoutMilliseconds: run.timeoutMilliseconds) { result in
                    metrics.note(result)
                    callback.end(with: .hookRunFinished(result))
                }
                return EmptyDisposable()
            }
            .routeEffects(withParameters: \.dispatcherRun).to { run in dispatcher.dispatch(run) }
            .routeEffects(withParameters: \.networkdWatch).to(networkdStates)
            .routeEffects(withParameters: \.cancelledHookRuns).to { ids in hooks.cancel(ids) }
            .routeEffects(withParameters: \.timerStart).to(timerConnection)
            .routeEffects(withParameters: \.cancelledTimer).to { id in timers.cancel(id) }
            .routeEffects(withParameters: \.exitStatus).to { status in exit(status) }
    }

    /// The netlink dump (links, then addresses, then routes) and the udev enumeration run at the same time: the
    /// time to READY=1 is the longer of the two, not their sum.
    private static let udevEnumerationQueue = DispatchQueue(label: "netdevd.udev-enumeration")

    /// `duration` in whole milliseconds.
    private static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1_000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }

    static func enumerate(generation: Int, subsystems: [String]) -> Event {
        let devices = Locked<(Result<[UdevDevice], SystemCallError>, milliseconds: Int)>((.success([]), 0))
        let enumerated = DispatchGroup()
        let clock = ContinuousClock()
        if !subsystems.isEmpty {
            udevEnumerationQueue.async(group: enumerated) {
                let started = clock.now
                let result = Result { () throws(SystemCallError) in
                    try UdevEnumerator().devices(subsystems: subsystems)
                }
                let took = milliseconds(started.duration(to: clock.now))
                devices.withLock { $0 = (result, took) }
            }
        }
        let started = clock.now
        let dump = Result { () throws(NetlinkError) in try RouteDumper().snapshot() }
        let dumpTook = started.duration(to: clock.now)
        enumerated.wait()
        let (read, devicesTook) = devices.withLock { $0 }
        do {
            var snapshot = KernelValues.snapshot(try dump.get(), devices: try read.get())
            snapshot.readTimes = ReadTimes(
                kernelMilliseconds: milliseconds(dumpTook), devicesMilliseconds: devicesTook)
            return .enumerated(generation: generation, snapshot: snapshot)
        } catch let error as NetlinkError {
            return .enumerationFailed(generation: generation, reason: error.description)
        } catch {
            return .enumerationFailed(generation: generation, reason: "\(error)")
        }
    }
}
