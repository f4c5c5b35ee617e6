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
/// Every readiness is read at once, with no timer: a burst batches itself (what arrives while the loop is busy is
/// read in one go). The descriptor is watched by the ``Poller``, not a Dispatch source (whose every event wakes
/// libdispatch's manager thread twice); a Dispatch source only if the poller cannot be had.
public final class ReadableEventSource: EventSource {
    private let fileDescriptor: Int32
    private let queue: DispatchQueue
    private let read: @Sendable () throws -> [Event]
    private let failure: Event
    private let problem: SourceProblem
    private let trim: MemoryTrim?

    /// A source over `fileDescriptor`, read on `queue`; each read is reported to `trim`.
    public init(
        fileDescriptor: Int32,
        queue: DispatchQueue,
        trim: MemoryTrim? = nil,
        failure: Event,
        problem: @escaping SourceProblem,
        read: @escaping @Sendable () throws -> [Event]
    ) {
        self.fileDescriptor = fileDescriptor
        self.queue = queue
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
        let readPending: @Sendable () -> Void = { [read, failure, problem, trim] in
            guard !subscription.cancelled else { return }
            do {
                for event in try read() {
                    consumer(event)
                }
            } catch {
                problem("\(error)")
                consumer(failure)
            }
            trim?.noteActivity()
        }
        if let token = Poller.shared?.register(fileDescriptor, queue: queue, handler: readPending) {
            subscription.token = token
        } else {
            let source = DispatchSource.makeReadSource(fileDescriptor: fileDescriptor, queue: queue)
            source.setEventHandler(handler: readPending)
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
            fileDescriptor: monitor.fileDescriptor, queue: queue, trim: trim,
            failure: .monitorOverflowed(source: .udev),
            problem: problem
        ) {
            let batch = try monitor.readAvailable(upTo: readLimit)
            return batch.devices.map(KernelValues.event) + (batch.overflowed ? [.monitorOverflowed(source: .udev)] : [])
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
            fileDescriptor: watcher.fileDescriptor, queue: queue, trim: trim,
            failure: .monitorOverflowed(source: .netlink),
            problem: problem
        ) {
            let batch = try watcher.readAvailable(upTo: readLimit)
            for malformed in batch.malformed {
                problem("ignored a malformed rtnetlink message: \(malformed)")
            }
            let lost = batch.overflowed || !batch.malformed.isEmpty
            if let linksAnnounced, batch.messages.contains(where: \.isLink) { linksAnnounced() }
            return batch.messages.flatMap(KernelValues.events) + (lost ? [.monitorOverflowed(source: .netlink)] : [])
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
