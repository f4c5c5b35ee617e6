internal import CLinux
public import Dispatch
public import MobiusCore
public import NetdevSession
public import Netlink
public import Udev

#if canImport(Glibc)
import Glibc
#endif

/// A report from an event source that is not an event for the session: a read error, a malformed message.
public typealias SourceProblem = @Sendable (String) -> Void

/// Events read from a non-blocking file descriptor whenever it is readable: the shape of both monitors.
/// `read` drains what is pending and returns the events it means; a thrown error is reported through `problem`
/// and becomes `failure`, because a monitor that cannot read has lost events.
///
/// A readiness after a quiet spell is read at once. With a hold-off (the kernel's monitors have one), a source read
/// again within two hold-offs of its last read (messages are streaming in) is watched again only once the hold-off
/// has passed, so messages that trickle in (one every few milliseconds, as the kernel sends them when it is slow
/// with many links) are read several at a time, not each with a wake-up of its own. A read that stopped at its limit
/// is followed at once; messages further apart than two hold-offs are each read at once, as without one (holding
/// off then would only add an empty wake-up). The descriptor is watched by the ``Poller``, not a Dispatch source
/// (whose every event wakes libdispatch's manager thread twice); a Dispatch source only if the poller cannot be had
/// (and then with no hold-off).
public final class ReadableEventSource: EventSource {
    /// What one read found: the events, and whether the descriptor had nothing more (`false`: the read stopped at
    /// its limit, and more is waiting).
    public struct Reading: Sendable {
        /// The events read, in order.
        public var events: [Event]
        /// Whether the descriptor had nothing more to read.
        public var drained: Bool

        /// A read's result.
        public init(_ events: [Event], drained: Bool) {
            self.events = events
            self.drained = drained
        }
    }

    /// How long the kernel's monitors wait, after a read while messages stream in, before they are watched again.
    /// `make benchmark-paced` (300 veth pairs made one `ip` at a time, as slowly as the kernel sends with 20,000
    /// links): netdevd's CPU per message 63.3-86.7 µs read as they came, 30.0-36.7 with 30 ms (53.3 with 10 ms);
    /// 1,000 links in one `ip -batch`: 50.1 / 97.1 µs create / delete without, 30.5 / 57.8 with 30 ms
    /// (docs/PERFORMANCE.md). What it costs: a message that follows another within 60 ms is seen up to 30 ms later.
    public static let monitorHoldOff: Duration = .milliseconds(30)

    private let fileDescriptor: Int32
    private let queue: DispatchQueue
    /// The hold-off in nanoseconds (0: none).
    private let holdOff: UInt64
    private let read: @Sendable () throws -> Reading
    private let failure: Event
    private let problem: SourceProblem
    private let trim: MemoryTrim?

    /// A source over `fileDescriptor`, read on `queue`; while messages stream in, watched again `holdOff` after a
    /// read that drained it (a negative or zero hold-off: never held off); each read is reported to `trim`.
    public init(
        fileDescriptor: Int32,
        queue: DispatchQueue,
        holdOff: Duration = .zero,
        trim: MemoryTrim? = nil,
        failure: Event,
        problem: @escaping SourceProblem,
        read: @escaping @Sendable () throws -> Reading
    ) {
        self.fileDescriptor = fileDescriptor
        self.queue = queue
        let (seconds, attoseconds) = holdOff.components
        self.holdOff =
            seconds < 0 || (seconds == 0 && attoseconds <= 0)
            // Capped at a day: twice it is compared with a monotonic clock's nanoseconds.
            ? 0 : min(UInt64(seconds), 86_400) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        self.trim = trim
        self.failure = failure
        self.problem = problem
        self.read = read
    }

    /// Starts reading.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        subscribe(consumer: consumer, stopped: nil)
    }

    /// Starts reading; once the subscription is disposed and the descriptor is no longer watched (on the queue),
    /// `stopped` is called: from then on the descriptor may be closed.
    public func subscribe(
        consumer: @escaping Consumer<Event>, stopped: (@Sendable () -> Void)?
    ) -> any Disposable {
        let subscription = Subscription()
        // Returns whether to hold off before the descriptor is watched again.
        let readPending: @Sendable () -> Bool = { [read, failure, problem, trim, holdOff] in
            guard !subscription.cancelled else { return false }
            defer { trim?.noteActivity() }
            let now = holdOff > 0 ? PollerTimer.now() : 0
            let streaming = now - subscription.lastRead < 2 * holdOff
            subscription.lastRead = now
            do {
                let reading = try read()
                for event in reading.events {
                    consumer(event)
                }
                return reading.drained && streaming
            } catch {
                problem("\(error)")
                consumer(failure)
                return false
            }
        }
        if let token = Poller.shared?.register(
            fileDescriptor, queue: queue, holdOffNanoseconds: holdOff, handler: readPending)
        {
            subscription.token = token
        } else {
            let source = DispatchSource.makeReadSource(fileDescriptor: fileDescriptor, queue: queue)
            source.setEventHandler { _ = readPending() }
            // libdispatch may use the descriptor until its cancel handler has run.
            if let stopped { source.setCancelHandler(handler: stopped) }
            subscription.source = source
            source.resume()
        }
        let queue = queue
        return AnonymousDisposable {
            queue.async {
                subscription.cancelled = true
                if let token = subscription.token {
                    Poller.shared?.unregister(token)
                    stopped?()
                }
                subscription.source?.cancel()
            }
        }
    }

    /// What a subscription reads with. `@unchecked Sendable`: written before reading starts, then read and
    /// written only on the source's queue.
    private final class Subscription: @unchecked Sendable {
        /// When the descriptor was last read (``PollerTimer/now()``).
        var lastRead: UInt64 = 0
        var token: UInt64?
        var source: (any DispatchSourceRead)?
        var cancelled = false
    }
}

extension ReadableEventSource {
    /// The most datagrams (rtnetlink) or devices (udev) one readiness reads; what is left is read at the next, which
    /// the poller reports at once. Draining everything pending held all of it at once, parsed: at 20,000 links,
    /// netdevd stopped while 2,500 links went down (and their addresses and routes with them) reached 73.7-84.7 MiB
    /// as it caught up (from 32.1-36.3); 37.5 (from 33.0) reading 256 at a time.
    static let readLimit = 256

    /// udev events (from udevd or the kernel) as session events; an overflow becomes `monitorOverflowed(.udev)`.
    public static func udev(
        _ monitor: UdevMonitor, queue: DispatchQueue, trim: MemoryTrim? = nil,
        problem: @escaping SourceProblem
    )
        -> ReadableEventSource
    {
        ReadableEventSource(
            fileDescriptor: monitor.fileDescriptor, queue: queue, holdOff: monitorHoldOff, trim: trim,
            failure: .monitorOverflowed(source: .udev),
            problem: problem
        ) {
            let batch = try monitor.readAvailable(upTo: readLimit)
            return Reading(
                batch.devices.map(KernelValues.event) + (batch.overflowed ? [.monitorOverflowed(source: .udev)] : []),
                drained: batch.drained)
        }
    }

    /// rtnetlink changes as session events; an overflow, or a malformed message (something was not understood,
    /// so the model may be wrong), becomes `monitorOverflowed(.netlink)`. `linksAnnounced` is told after a read
    /// with links added, changed or removed (the device source watches for uevents that should follow).
    public static func netlink(
        _ watcher: RouteWatcher, queue: DispatchQueue, trim: MemoryTrim? = nil,
        problem: @escaping SourceProblem, linksAnnounced: (@Sendable () -> Void)? = nil
    )
        -> ReadableEventSource
    {
        ReadableEventSource(
            fileDescriptor: watcher.fileDescriptor, queue: queue, holdOff: monitorHoldOff, trim: trim,
            failure: .monitorOverflowed(source: .netlink),
            problem: problem
        ) {
            let batch = try watcher.readAvailable(upTo: readLimit)
            for malformed in batch.malformed {
                problem("ignored a malformed rtnetlink message: \(malformed)")
            }
            let lost = batch.overflowed || !batch.malformed.isEmpty
            if let linksAnnounced, batch.messages.contains(where: \.isLink) { linksAnnounced() }
            return Reading(
                batch.messages.flatMap(KernelValues.events) + (lost ? [.monitorOverflowed(source: .netlink)] : []),
                drained: batch.drained)
        }
    }
}

extension RouteMessage {
    /// A link added, changed or removed.
    fileprivate var isLink: Bool {
        switch self {
        case .newLink, .deletedLink: true
        case .newAddress, .deletedAddress, .newRoute, .deletedRoute: false
        }
    }
}
