internal import CLinux
public import Dispatch
public import MobiusCore
public import NetdevSession
public import Netlink
public import Udev

#if canImport(Glibc)
import Glibc
#endif

/// A Dispatch source owned by a subscription. `@unchecked Sendable`: libdispatch sources may be cancelled from
/// any thread (dispatch_source_cancel is thread-safe), and nothing else is done with it after set-up.
final class SourceHandle: @unchecked Sendable {
    private let source: any DispatchSourceProtocol

    init(_ source: any DispatchSourceProtocol) {
        self.source = source
    }

    func cancel() {
        source.cancel()
    }
}

/// A report from an event source that is not an event for the session: a read error, a malformed message.
public typealias SourceProblem = @Sendable (String) -> Void

/// Events read from a non-blocking file descriptor whenever it is readable: the shape of both monitors.
/// `read` drains what is pending and returns the events it means; a thrown error is reported through `problem`
/// and becomes `failure`, because a monitor that cannot read has lost events.
///
/// Under load, reads can be coalesced: the first message after a quiet spell is read at once; after that the
/// source is paused and the descriptor read again `coalescingWindow` later (and every window while messages keep
/// coming), so a burst of kernel messages wakes netdevd once per window instead of once per message. That needs
/// a receive buffer with room for a window's messages (see ``Daemon``); without a window every message is read
/// as soon as it arrives.
public final class ReadableEventSource: EventSource {
    /// The window netdevd uses with receive buffers of 1 MiB and more.
    public static let defaultCoalescingWindow = DispatchTimeInterval.milliseconds(5)

    private let fileDescriptor: Int32
    private let coalescingWindow: DispatchTimeInterval?
    private let queue: DispatchQueue
    private let read: @Sendable () throws -> [Event]
    private let failure: Event
    private let problem: SourceProblem

    /// A source over `fileDescriptor`, read on `queue`.
    public init(
        fileDescriptor: Int32,
        queue: DispatchQueue,
        coalescingWindow: DispatchTimeInterval? = nil,
        failure: Event,
        problem: @escaping SourceProblem,
        read: @escaping @Sendable () throws -> [Event]
    ) {
        self.fileDescriptor = fileDescriptor
        self.coalescingWindow = coalescingWindow
        self.queue = queue
        self.failure = failure
        self.problem = problem
        self.read = read
    }

    /// Starts reading.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        let reader = CoalescingReader(
            source: DispatchSource.makeReadSource(fileDescriptor: fileDescriptor, queue: queue), queue: queue,
            window: coalescingWindow
        ) { [read, failure, problem] in
            do {
                let events = try read()
                for event in events {
                    consumer(event)
                }
                return !events.isEmpty
            } catch {
                problem("\(error)")
                consumer(failure)
                return true
            }
        }
        reader.start()
        return AnonymousDisposable { reader.cancel() }
    }
}

/// Gives the memory of a burst back to the system once netdevd has been quiet for a second: glibc keeps freed
/// memory in its heap, so without this the RSS after a burst stays at the burst's peak.
enum MemoryTrim {
    /// The burst that ended last; a trim waits for no newer one. Only used on the loop queue.
    nonisolated(unsafe) private static var generation = 0
    /// Serial, like every queue of netdevd's (see ``Daemon``).
    private static let trimQueue = DispatchQueue(label: "netdevd.malloc-trim")

    /// A monitor went quiet after a burst: trim in a second, unless another burst ends before. On `queue` (the
    /// loop's, where every monitor reads).
    static func burstEnded(on queue: DispatchQueue) {
        generation += 1
        let ended = generation
        queue.asyncAfter(deadline: .now() + .seconds(1)) {
            // Trimming walks the heap (milliseconds): not on the loop's queue.
            if ended == generation {
                trimQueue.async { malloc_trim(0) }
            }
        }
    }
}

/// A read source that pauses itself for its window after each read that found something, and reads again from a
/// timer while there is more.
///
/// `@unchecked Sendable`: `paused` and `cancelled` are read and written only on `queue`.
private final class CoalescingReader: @unchecked Sendable {
    private let source: any DispatchSourceRead
    private let queue: DispatchQueue
    private let window: DispatchTimeInterval?
    /// Reads and delivers what is pending; `true` when it found something.
    private let readPending: () -> Bool
    private var paused = false
    private var cancelled = false

    init(
        source: any DispatchSourceRead, queue: DispatchQueue, window: DispatchTimeInterval?,
        readPending: @escaping () -> Bool
    ) {
        self.source = source
        self.queue = queue
        self.window = window
        self.readPending = readPending
    }

    func start() {
        source.setEventHandler { [self] in
            guard !cancelled, readPending(), window != nil else { return }
            paused = true
            source.suspend()
            readLater()
        }
        source.resume()
    }

    private func readLater() {
        guard let window else { return }
        queue.asyncAfter(deadline: .now() + window) { [self] in
            guard !cancelled else { return }
            if readPending() {
                readLater()
            } else {
                paused = false
                source.resume()
                MemoryTrim.burstEnded(on: queue)
            }
        }
    }

    func cancel() {
        queue.async { [self] in
            guard !cancelled else { return }
            cancelled = true
            source.cancel()
            // A suspended source never finishes its cancellation.
            if paused {
                paused = false
                source.resume()
            }
        }
    }
}

extension ReadableEventSource {
    /// udev events (from udevd or the kernel) as session events; an overflow becomes `monitorOverflowed(.udev)`.
    public static func udev(
        _ monitor: UdevMonitor, queue: DispatchQueue, coalescingWindow: DispatchTimeInterval? = nil,
        problem: @escaping SourceProblem
    )
        -> ReadableEventSource
    {
        ReadableEventSource(
            fileDescriptor: monitor.fileDescriptor, queue: queue, coalescingWindow: coalescingWindow,
            failure: .monitorOverflowed(source: .udev),
            problem: problem
        ) {
            let batch = try monitor.readAvailable()
            return batch.devices.map(KernelValues.event) + (batch.overflowed ? [.monitorOverflowed(source: .udev)] : [])
        }
    }

    /// rtnetlink changes as session events; an overflow, or a malformed message (something was not understood,
    /// so the model may be wrong), becomes `monitorOverflowed(.netlink)`.
    public static func netlink(
        _ watcher: RouteWatcher, queue: DispatchQueue, coalescingWindow: DispatchTimeInterval? = nil,
        problem: @escaping SourceProblem
    )
        -> ReadableEventSource
    {
        ReadableEventSource(
            fileDescriptor: watcher.fileDescriptor, queue: queue, coalescingWindow: coalescingWindow,
            failure: .monitorOverflowed(source: .netlink),
            problem: problem
        ) {
            let batch = try watcher.readAvailable()
            for malformed in batch.malformed {
                problem("ignored a malformed rtnetlink message: \(malformed)")
            }
            let lost = batch.overflowed || !batch.malformed.isEmpty
            return batch.messages.flatMap(KernelValues.events) + (lost ? [.monitorOverflowed(source: .netlink)] : [])
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP as session events (the default actions are disabled while subscribed).
public final class SignalEventSource: EventSource {
    private let queue: DispatchQueue

    /// Signals handled on `queue`.
    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    /// Starts handling the signals.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        let handles = [(SIGTERM, Signal.terminate), (SIGINT, .interrupt), (SIGHUP, .hangUp)].map { number, signal in
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { consumer(.signalReceived(signal)) }
            source.resume()
            return SourceHandle(source)
        }
        return AnonymousDisposable {
            for handle in handles { handle.cancel() }
        }
    }
}

/// A `watchdogTick` every half of the watchdog interval, so a wedged loop stops pinging systemd.
public final class WatchdogEventSource: EventSource {
    private let intervalMicroseconds: UInt64
    private let queue: DispatchQueue

    /// Ticks every `intervalMicroseconds / 2` on `queue`.
    public init(intervalMicroseconds: UInt64, queue: DispatchQueue) {
        self.intervalMicroseconds = intervalMicroseconds
        self.queue = queue
    }

    /// Starts ticking.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let half = DispatchTimeInterval.microseconds(Int(clamping: intervalMicroseconds / 2))
        timer.schedule(deadline: .now(), repeating: half)
        timer.setEventHandler { consumer(.watchdogTick) }
        timer.resume()
        let handle = SourceHandle(timer)
        return AnonymousDisposable { handle.cancel() }
    }
}
