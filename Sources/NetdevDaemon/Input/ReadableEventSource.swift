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
/// `read` reads what is pending and hands each event it means to `deliver`, which passes it on at once (no array of
/// a read's events is made); a thrown error is reported through `problem` and becomes `failure`, because a monitor
/// that cannot read has lost events.
///
/// A readiness after a quiet spell is read at once. With a hold-off (the kernel's monitors have one), a source read
/// again within its hold-off plus the shortest one after its last read (messages are streaming in) is watched again
/// only once the hold-off has passed, so messages that trickle in (one every few milliseconds, as the kernel sends
/// them when it is slow with many links) are read several at a time, not each with a wake-up of its own. While reads
/// keep finding few events the hold-off doubles, up to the longest (``HoldOff``). A read that stopped at its limit
/// is followed at once; messages further apart are each read at once, as without one (holding off then would only
/// add an empty wake-up), and the hold-off is back to the shortest. The descriptor is watched by the ``Poller``,
/// not a Dispatch source (whose every event wakes libdispatch's manager thread twice); a Dispatch source only if the
/// poller cannot be had (and then with no hold-off).
public final class ReadableEventSource: EventSource {
    /// How one read ended: whether the descriptor had nothing more (`false`: the read stopped at its limit, and more
    /// is waiting).
    public struct Reading: Sendable {
        /// Whether the descriptor had nothing more to read.
        public var drained: Bool

        /// A read's result.
        public init(drained: Bool) {
            self.drained = drained
        }
    }

    /// An array a source's read keeps from one read to the next, so that a read appends into storage already made
    /// rather than growing a new array by doubling (glibc's allocator then consolidates its free chunks at each
    /// block past 1 KiB). `@unchecked Sendable`: used only in the source's read, on its queue.
    final class ReadBuffer<Element>: @unchecked Sendable {
        var elements: [Element] = []
    }

    /// How long the kernel's monitors wait, after a read while messages stream in, before they are watched again,
    /// at first. `make benchmark-paced` (300 veth pairs made one `ip` at a time, about 1,000 messages a second):
    /// netdevd's CPU per message 63.3-86.7 µs read as they came, 30.0-36.7 with 30 ms (53.3 with 10 ms); 1,000 links
    /// in one `ip -batch`: 50.1 / 97.1 µs create / delete without, 30.5 / 57.8 with 30 ms (docs/PERFORMANCE.md).
    public static let monitorHoldOff: Duration = .milliseconds(30)

    /// The longest the kernel's monitors hold off: while reads keep finding few messages (fewer than
    /// ``HoldOff/fewEvents``), each hold-off is twice the one before, up to this. With 20,000 links present the
    /// kernel sends a veth pair's messages every 33 ms (create) to 59 ms (delete), and 30 ms read about one pair per
    /// wake-up. `make benchmark-paced PACED_ARGS="--delete --interval 33"` (a pair every 33 ms): 88.9 / 158.3 µs
    /// per message (create / delete) with 30 ms always, 33.3 / 58.3 growing to 240 ms (docs/PERFORMANCE.md). What
    /// it costs: while messages keep trickling in, one is seen up to this much later.
    public static let monitorLongestHoldOff: Duration = .milliseconds(240)

    private let fileDescriptor: Int32
    private let queue: DispatchQueue
    /// The shortest and longest hold-off in nanoseconds (0: none).
    private let holdOff: HoldOff
    private let read: @Sendable (_ deliver: (Event) -> Void) throws -> Reading
    private let failure: Event
    private let problem: SourceProblem
    private let trim: MemoryTrim?

    /// A source over `fileDescriptor`, read on `queue`; while messages stream in, watched again `holdOff` after a
    /// read that drained it, growing up to `longestHoldOff` while reads find few events (a negative or zero
    /// hold-off: never held off; no longest: `holdOff` always); each read is reported to `trim`.
    public init(
        fileDescriptor: Int32,
        queue: DispatchQueue,
        holdOff: Duration = .zero,
        longestHoldOff: Duration? = nil,
        trim: MemoryTrim? = nil,
        failure: Event,
        problem: @escaping SourceProblem,
        read: @escaping @Sendable (_ deliver: (Event) -> Void) throws -> Reading
    ) {
        self.fileDescriptor = fileDescriptor
        self.queue = queue
        let shortest = HoldOff.nanoseconds(holdOff)
        let longest = HoldOff.nanoseconds(longestHoldOff ?? holdOff)
        self.holdOff = HoldOff(shortest: shortest, longest: max(shortest, longest))
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
        subscription.holdOff = holdOff.shortest
        // Returns the nanoseconds to hold off before the descriptor is watched again.
        let readPending: @Sendable () -> UInt64 = { [read, failure, problem, trim, holdOff] in
            guard !subscription.cancelled else { return 0 }
            defer { trim?.noteActivity() }
            let now = holdOff.shortest > 0 ? PollerTimer.now() : 0
            let held = subscription.holdOff
            let streaming = now - subscription.lastRead < held + holdOff.shortest
            subscription.lastRead = now
            do {
                var events = 0
                let reading = try read { event in
                    consumer(event)
                    events += 1
                }
                subscription.holdOff = holdOff.next(after: held, streaming: streaming, events: events)
                return reading.drained && streaming ? held : 0
            } catch {
                problem("\(error)")
                consumer(failure)
                return 0
            }
        }
        if let token = Poller.shared?.registerHoldingOff(
            fileDescriptor, queue: queue, handler: readPending)
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
        /// The hold-off after the next read that streams, in nanoseconds.
        var holdOff: UInt64 = 0
        var token: UInt64?
        var source: (any DispatchSourceRead)?
        var cancelled = false
    }
}

extension ReadableEventSource {
    /// How long a source holds off: from `shortest`, doubled after each streaming read that found fewer than
    /// ``fewEvents`` events, up to `longest`; halved after one that found more than ``manyEvents``; back to `shortest`
    /// after a quiet spell (a read not streaming).
    struct HoldOff: Sendable {
        /// A read with fewer events than this lets the next hold-off grow.
        static let fewEvents = 16
        /// A read with more events than this shortens the next hold-off.
        static let manyEvents = 64

        let shortest: UInt64
        let longest: UInt64

        /// The hold-off after a read made `held` into a hold-off (or at once), streaming or not, that found `events`.
        func next(after held: UInt64, streaming: Bool, events: Int) -> UInt64 {
            guard streaming else { return shortest }
            if events < Self.fewEvents { return min(held * 2, longest) }
            if events > Self.manyEvents { return max(held / 2, shortest) }
            return held
        }

        /// `duration` in nanoseconds; 0 for a negative or zero one, capped at a day (added to a monotonic clock's
        /// nanoseconds).
        static func nanoseconds(_ duration: Duration) -> UInt64 {
            let (seconds, attoseconds) = duration.components
            guard seconds > 0 || (seconds == 0 && attoseconds > 0) else { return 0 }
            return min(UInt64(seconds), 86_400) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        }
    }

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
        let devices = ReadBuffer<UdevDevice>()
        return ReadableEventSource(
            fileDescriptor: monitor.fileDescriptor, queue: queue, holdOff: monitorHoldOff,
            longestHoldOff: monitorLongestHoldOff, trim: trim,
            failure: .monitorOverflowed(source: .udev),
            problem: problem
        ) { deliver in
            defer { devices.elements.removeAll(keepingCapacity: true) }
            let read = try monitor.readAvailable(upTo: readLimit, appendingTo: &devices.elements)
            for device in devices.elements {
                deliver(KernelValues.event(device))
            }
            if read.overflowed { deliver(.monitorOverflowed(source: .udev)) }
            return Reading(drained: read.drained)
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
        let messages = ReadBuffer<RouteMessage>()
        return ReadableEventSource(
            fileDescriptor: watcher.fileDescriptor, queue: queue, holdOff: monitorHoldOff,
            longestHoldOff: monitorLongestHoldOff, trim: trim,
            failure: .monitorOverflowed(source: .netlink),
            problem: problem
        ) { deliver in
            defer { messages.elements.removeAll(keepingCapacity: true) }
            let read = try watcher.readAvailable(upTo: readLimit, appendingTo: &messages.elements)
            for malformed in read.malformed {
                problem("ignored a malformed rtnetlink message: \(malformed)")
            }
            if let linksAnnounced, messages.elements.contains(where: \.isLink) { linksAnnounced() }
            for message in messages.elements {
                if let event = KernelValues.event(message) { deliver(event) }
            }
            if read.overflowed || !read.malformed.isEmpty { deliver(.monitorOverflowed(source: .netlink)) }
            return Reading(drained: read.drained)
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
