public import Dispatch
public import MobiusCore
public import NetdevSession
public import Systemd
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
/// - **udevd (re)started**, seen as its control socket appearing in `/run/udev` (inotify). Where udevd runs without
///   systemd holding its sockets (a container, the test harness), the kernel's uevents while it was down reached no
///   udev monitor and are not replayed, so the devices are re-read; with `follow`, a monitor that fell back to the
///   kernel goes back to udevd first. Under systemd the control socket outlives a restart and nothing fires (nor is
///   needed: the kernel socket, held by systemd, keeps the events). An inotify queue overflow probes instead.
///
/// Everything happens on `queue`, the loop's. A monitor of source `kernel` without `follow` is only read: the
/// kernel's uevents never stop.
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
    private let say: @Sendable (JournalPriority, String) -> Void

    private var consumer: Consumer<Event>?
    private var source: UdevSource
    private var reading: (any Disposable)?
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

    /// Device events from `monitor`, read on `queue`; `follow` lets the source change with udevd (`auto`). `say`
    /// logs what changed for the operator; `problem` reports read errors.
    public init(
        monitor: UdevMonitor, follow: Bool, queue: DispatchQueue, trim: MemoryTrim? = nil,
        problem: @escaping SourceProblem, say: @escaping @Sendable (JournalPriority, String) -> Void
    ) {
        self.monitor = monitor
        self.follow = follow
        self.queue = queue
        self.trim = trim
        self.problem = problem
        self.say = say
        self.source = monitor.source
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
        guard source == .udev, !outage else { return }
        if checkPending {
            announcedSinceCheck = true
            return
        }
        let now = PollerTimer.now()
        if let lastProbe, now < lastProbe + Self.probeInterval { return }
        startCheck(now: now)
    }

    /// Looks at the uevents heard in 2 s from `now`.
    private func startCheck(now: UInt64) {
        guard let timer else { return }
        checkPending = true
        announcedSinceCheck = false
        heardAtAnnouncement = heard.value
        timer.schedule(atUptimeNanoseconds: now + Self.quietAfter)
    }

    private func startReading() {
        guard let consumer else { return }
        let heard = heard
        let reader = ReadableEventSource.udev(monitor, queue: queue, trim: trim, problem: problem)
        reading = reader.subscribe { event in
            heard.value &+= 1
            consumer(event)
        }
    }

    private func checkQuiet() {
        checkPending = false
        guard !disposed, source == .udev, !outage else { return }
        if heard.value != heardAtAnnouncement {
            // udevd spoke since the check began; whether it answers the links announced after that is the next
            // check's question.
            if announcedSinceCheck { startCheck(now: PollerTimer.now()) }
            return
        }
        lastProbe = PollerTimer.now()
        guard case .notRunning(let reason) = UdevdStatus.probe() else { return }
        outage = true
        if follow {
            say(
                .warning,
                "udevd is not running (\(reason)) and no device events followed the kernel's link changes: "
                    + "following the kernel's raw uevents (without udev's properties) until it is back; re-reading "
                    + "devices")
            switchSource(to: .kernel)
        } else {
            say(
                .warning,
                "udevd is not running (\(reason)): no device events arrive until it starts again "
                    + "(--udev-source udev; 'auto' follows the kernel's uevents meanwhile)")
        }
    }

    /// Something appeared in /run/udev (on the queue); `nil` when inotify's queue overflowed, so it is not known.
    private func udevdStarted(named name: String?) {
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
    private func switchSource(to new: UdevSource) {
        // The old socket is unregistered (queued first) before the switch closes it.
        reading?.dispose()
        reading = nil
        queue.async { [self] in
            guard !disposed else { return }
            do {
                try monitor.switchSource(to: new)
                source = new
            } catch {
                say(.warning, "The device source stays '\(source.rawValue)': \(error)")
            }
            startReading()
            consumer?(.monitorOverflowed(source: .udev))
        }
    }

    /// A count kept on the queue. `@unchecked Sendable`: read and written only on the source's queue.
    private final class Counter: @unchecked Sendable {
        var value: UInt64 = 0
    }

    /// Tells `appeared` about udevd's control socket appearing in `/run/udev` (its name, `control`), or about
    /// inotify having lost events (`nil`). `nil` when `/run/udev` cannot be watched (it does not exist, or inotify
    /// is refused). The inotify descriptor lives as long as netdevd.
    static func controlSocketCreated(
        queue: DispatchQueue, problem: @escaping SourceProblem, appeared: @escaping @Sendable (String?) -> Void
    ) -> ReadableEventSource? {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        guard inotify_add_watch(fd, "/run/udev", UInt32(IN_CREATE | IN_MOVED_TO)) >= 0 else {
            close(fd)
            return nil
        }
        return ReadableEventSource(
            fileDescriptor: fd, queue: queue, failure: .monitorOverflowed(source: .udev), problem: problem
        ) {
            var names: [String] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                names += inotifyNames(buffer[0..<count])
            }
            // An event without a name is inotify's own (IN_Q_OVERFLOW, or the watch's end).
            if names.contains("control") {
                appeared("control")
            } else if names.contains("") {
                appeared(nil)
            }
            return []
        }
    }

    /// The file names in a read of inotify events (`struct inotify_event`: wd, mask, cookie, len, then `len` bytes
    /// of NUL-padded name).
    static func inotifyNames(_ bytes: ArraySlice<UInt8>) -> [String] {
        var names: [String] = []
        var offset = bytes.startIndex
        let header = 16
        while offset + header <= bytes.endIndex {
            let length = Int(
                bytes[offset + 12..<offset + 16].withUnsafeBytes {
                    $0.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
                })
            let end = min(offset + header + length, bytes.endIndex)
            let name = bytes[(offset + header)..<end].prefix { $0 != 0 }
            names.append(String(decoding: name, as: UTF8.self))
            offset = end
        }
        return names
    }
}
