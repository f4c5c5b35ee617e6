public import Dispatch
public import MobiusCore
public import NetdevSession
public import Syslog
import Systemd
public import Udev

#if canImport(Glibc)
import Glibc
#endif

/// The device events, from a source that delivers them: a ``UdevMonitor``'s events as session events, and what keeps
/// them coming when udevd comes and goes.
///
/// - **udevd gone.** A monitor of source `udev` hears nothing once udevd stops, and says nothing about it. So when
///   the kernel announces link changes (``kernelAnnouncedLinks()``, from the rtnetlink source) and no uevent
///   arrives within 2 s, a probe (``UdevdStatus``: is anything listening on udevd's control socket?) decides; at
///   most one probe in 10 s. If udevd is gone, `follow` (`--udev-source auto`) switches the monitor to the kernel's
///   raw uevents and re-reads the devices (`monitorOverflowed(.udev)`); without it (`--udev-source udev`) the
///   outage is said, once.
/// - **udevd (re)started**, seen as its control socket appearing in `/run/udev` (inotify; `/run` until `/run/udev`
///   exists, and again if it goes; once the watch is in place, a probe catches a udevd that started before). Where
///   udevd runs without systemd holding its sockets (a container, the test harness), the kernel's uevents while it
///   was down reached no udev monitor and are not replayed, so the devices are re-read; with `follow`, a monitor
///   that fell back to the kernel goes back to udevd first. Under systemd the control socket outlives a restart and nothing fires (nor is
///   needed: the kernel socket, held by systemd, keeps the events). An inotify queue overflow probes instead.
///
/// Everything happens on `queue`, the loop's (checked where it matters). A monitor of source `kernel` without
/// `follow` is only read: the kernel's uevents never stop.
///
/// `@unchecked Sendable`: the mutable state is set in ``subscribe(consumer:)`` before anything is read, then read
/// and written only on `queue`.
public final class DeviceEventSource: EventSource, @unchecked Sendable {
    private static let quietAfter: UInt64 = 2_000_000_000
    private static let probeInterval: UInt64 = 10_000_000_000

    private let monitor: UdevMonitor
    private let follow: Bool
    private let queue: DispatchQueue
    private let trim: MemoryTrim?
    private let problem: SourceProblem
    private let say: @Sendable (LogPriority, String) -> Void

    private var consumer: Consumer<Event>?
    /// The source read, or being switched to.
    private var source: UdevSource
    private var reading: (any Disposable)?
    /// The source to switch to once the current reading has stopped.
    private var pendingSwitch: UdevSource?
    private var restarts: (any Disposable)?
    private var timer: PollerTimer?
    /// Uevents heard so far, and when the kernel's link changes started the current check.
    private let heard = Counter()
    private var heardAtAnnouncement: UInt64 = 0
    private var checkPending = false
    /// The kernel announced more link changes while a check was pending.
    private var announcedSinceCheck = false
    private var lastProbe: UInt64?
    /// udevd was found gone (and it was said); over when its control socket appears again.
    private var outage = false
    private var disposed = false

    /// Device events from `monitor`, read on `queue`; `follow` lets the source change with udevd (`auto`).
    /// `udevdRunning` is what the start found (an outage it found is said then, not again here). `say` logs what
    /// changed for the operator; `problem` reports read errors.
    public init(
        monitor: UdevMonitor, follow: Bool, udevdRunning: Bool, queue: DispatchQueue, trim: MemoryTrim? = nil,
        problem: @escaping SourceProblem, say: @escaping @Sendable (LogPriority, String) -> Void
    ) {
        self.monitor = monitor
        self.follow = follow
        self.queue = queue
        self.trim = trim
        self.problem = problem
        self.say = say
        self.source = monitor.source
        self.outage = monitor.source == .udev && !udevdRunning
    }

    /// Starts reading, and watching udevd.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        self.consumer = consumer
        timer = PollerTimer(queue: queue) { [weak self] in self?.checkQuiet() }
        if follow || source == .udev {
            restarts = Self.controlSocketCreated(queue: queue, problem: problem) { [weak self] named in
                self?.udevdStarted(named: named)
            }?.subscribe { _ in }
        }
        startReading()
        if restarts != nil {
            queue.async { [weak self] in self?.checkStartedBeforeWatching() }
        }
        return AnonymousDisposable { [self] in
            queue.async { [self] in
                disposed = true
                timer?.disarm()
                reading?.dispose()
                restarts?.dispose()
            }
        }
    }

    /// The kernel announced links added, changed or removed (on the queue). Net devices come with uevents for the
    /// first and last, so if none arrive the source may have gone quiet.
    public func kernelAnnouncedLinks() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard source == .udev, !outage else { return }
        if checkPending {
            announcedSinceCheck = true
            return
        }
        startCheck()
    }

    /// Looks at the uevents heard in 2 s from now, or when the last probe is 10 s old, whichever is later (a
    /// change within those 10 s is checked then, not forgotten).
    private func startCheck() {
        guard let timer else { return }
        checkPending = true
        announcedSinceCheck = false
        heardAtAnnouncement = heard.value
        let earliest = lastProbe.map { $0 + Self.probeInterval } ?? 0
        timer.schedule(atUptimeNanoseconds: max(PollerTimer.now() + Self.quietAfter, earliest))
    }

    private func startReading() {
        guard let consumer else { return }
        reading?.dispose()
        let heard = heard
        let reader = ReadableEventSource.udev(monitor, queue: queue, trim: trim, problem: problem)
        reading = reader.subscribe(
            consumer: { event in
                heard.value &+= 1
                consumer(event)
            },
            stopped: { [weak self] in self?.readingStopped() })
    }

    private func checkQuiet() {
        dispatchPrecondition(condition: .onQueue(queue))
        checkPending = false
        guard !disposed, source == .udev, !outage else { return }
        if heard.value != heardAtAnnouncement {
            // udevd spoke since the check began; whether it answers the links announced after that is the next
            // check's question.
            if announcedSinceCheck { startCheck() }
            return
        }
        lastProbe = PollerTimer.now()
        guard case .notRunning(let reason) = UdevdStatus.probe() else {
            say(.debug, "udevd checked: running (no device event followed the kernel's link changes within 2 s)")
            if announcedSinceCheck { startCheck() }
            return
        }
        outage = true
        if follow {
            say(
                .warning,
                "udevd is not running (\(reason)) and no device events followed the kernel's link changes: "
                    + "following the kernel's raw uevents (without udev's properties) until it is back; re-reading "
                    + "devices")
            switchSource(to: .kernel)
        } else {
            say(.warning, Self.udevdAbsent(reason: reason))
        }
    }

    /// What an operator of `--udev-source udev` is told when udevd is not running, at the start or later.
    public static func udevdAbsent(reason: String) -> String {
        "udevd is not running (\(reason)): no device events arrive until it starts (--udev-source udev; 'auto' "
            + "follows the kernel's uevents meanwhile)"
    }

    /// A udevd that started between the start's probe and the watch on `/run/udev` made no inotify event.
    private func checkStartedBeforeWatching() {
        guard !disposed, (follow && source == .kernel) || outage, UdevdStatus.probe() == .running else { return }
        udevdStarted(named: "control")
    }

    /// Something appeared in /run/udev (on the queue): udevd's control socket (`control`; it is bound before
    /// udevd listens on it, so that is not probed), or `nil` when it is not known what (inotify's queue
    /// overflowed, or the watch moved), and a probe decides.
    private func udevdStarted(named name: String?) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !disposed else { return }
        if name == nil, UdevdStatus.probe() != .running { return }
        outage = false
        if follow && source == .kernel {
            say(.notice, "udevd started: device events from udevd again, with udev's properties; re-reading devices")
            switchSource(to: .udev)
        } else if source == .udev {
            say(
                .notice,
                "udevd started: re-reading devices (the kernel's device events while it was down reached no udev "
                    + "monitor)")
            consumer?(.monitorOverflowed(source: .udev))
        }
    }

    /// Reads from a new socket of `new`, and re-reads the devices: events on the old socket are lost with it.
    /// `source` says `new` at once (what is decided next builds on it); the switch itself waits until the old
    /// socket is no longer watched, since switching closes it.
    private func switchSource(to new: UdevSource) {
        source = new
        pendingSwitch = new
        if let reading {
            self.reading = nil
            reading.dispose()
        }
    }

    /// The reading of the old socket has stopped (on the queue): a pending switch happens now.
    private func readingStopped() {
        guard let new = pendingSwitch, !disposed else { return }
        pendingSwitch = nil
        do {
            try monitor.switchSource(to: new)
        } catch {
            source = monitor.source
            say(.warning, "The device source stays '\(source.rawValue)': \(error)")
        }
        startReading()
        consumer?(.monitorOverflowed(source: .udev))
    }

    /// A count kept on the queue. `@unchecked Sendable`: read and written only on the source's queue.
    private final class Counter: @unchecked Sendable {
        var value: UInt64 = 0
    }

    /// How long the watch on `/run/udev` stays unwatched after a read while its changes stream in. udevd makes
    /// `/run/udev/queue` at the start of every busy spell, and when the kernel sends a burst's uevents a few
    /// milliseconds apart (as it does with thousands of links) every uevent is a spell of its own: read as they come,
    /// they would wake the loop's thread once per uevent. What it costs: udevd starting again in a burst is noticed
    /// up to a second later (its devices are re-read then).
    static let restartWatchHoldOff: Duration = .seconds(1)

    /// Tells `appeared` about udevd's control socket appearing in `/run/udev` (its name, `control`), or about
    /// something that needs a probe (`nil`): inotify lost events, `/run/udev` appeared (watched through `/run` while
    /// it does not exist) or went. `nil` when neither can be watched (inotify refused). The inotify descriptor lives
    /// as long as netdevd. Held off by ``restartWatchHoldOff``.
    static func controlSocketCreated(
        queue: DispatchQueue, problem: @escaping SourceProblem, appeared: @escaping @Sendable (String?) -> Void
    ) -> ReadableEventSource? {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let watches = RunUdevWatches(inotify: fd)
        guard watches.watch() else {
            close(fd)
            return nil
        }
        return ReadableEventSource(
            fileDescriptor: fd, queue: queue, holdOff: restartWatchHoldOff, failure: .monitorOverflowed(source: .udev),
            problem: problem
        ) { _ in
            // udevd makes and removes /run/udev/queue around every busy spell: read at most once a second in a burst.
            var events: [Inotify.Event] = []
            Inotify.read(fd) { events += Inotify.events(in: $0) }
            var created = events.contains { $0.watch == watches.udev && $0.name == "control" }
            // An event without a name is inotify's own (IN_Q_OVERFLOW, or a watch's end: IN_IGNORED).
            let unsure = events.contains { $0.name.isEmpty || ($0.watch == watches.run && $0.name == "udev") }
            if unsure {
                let wasWatched = watches.udev != nil
                if !watches.watch() {
                    problem(
                        "cannot watch /run/udev or /run (inotify: \(String(cString: strerror(errno)))): udevd "
                            + "starting again is no longer noticed")
                }
                // A /run/udev just made may hold udevd's control socket already, made before the watch was.
                if !wasWatched && watches.udev != nil && access("/run/udev/control", F_OK) == 0 { created = true }
            }
            if created {
                appeared("control")
            } else if unsure {
                appeared(nil)
            }
            return ReadableEventSource.Reading(drained: true)
        }
    }

    /// The inotify watch on `/run/udev`, or on `/run` while `/run/udev` does not exist. `@unchecked Sendable`: made
    /// before reading starts, then used only on the source's queue (in its read).
    private final class RunUdevWatches: @unchecked Sendable {
        private let inotify: Int32
        private(set) var udev: Int32?
        private(set) var run: Int32?

        init(inotify: Int32) {
            self.inotify = inotify
        }

        /// Watches `/run/udev` if it exists (and then not `/run`), else `/run` for it to appear. False when neither
        /// can be watched.
        func watch() -> Bool {
            let udevWatch = inotify_add_watch(inotify, "/run/udev", UInt32(IN_CREATE | IN_MOVED_TO | IN_ONLYDIR))
            if udevWatch >= 0 {
                udev = udevWatch
                if let run { _ = inotify_rm_watch(inotify, run) }
                run = nil
                return true
            }
            udev = nil
            guard run == nil else { return true }
            let runWatch = inotify_add_watch(inotify, "/run", UInt32(IN_CREATE | IN_MOVED_TO | IN_ONLYDIR))
            guard runWatch >= 0 else { return false }
            run = runWatch
            return true
        }
    }
}
