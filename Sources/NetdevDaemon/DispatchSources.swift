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

/// udev events (from udevd or the kernel) as session events; an overflow becomes `monitorOverflowed(.udev)`.
public final class UdevEventSource: EventSource {
    private let monitor: UdevMonitor
    private let queue: DispatchQueue
    private let problem: SourceProblem

    /// Delivers `monitor`'s events, read on `queue`.
    public init(monitor: UdevMonitor, queue: DispatchQueue, problem: @escaping SourceProblem) {
        self.monitor = monitor
        self.queue = queue
        self.problem = problem
    }

    /// Starts reading.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        let source = DispatchSource.makeReadSource(fileDescriptor: monitor.fileDescriptor, queue: queue)
        let monitor = self.monitor
        let problem = self.problem
        source.setEventHandler {
            do {
                let batch = try monitor.readAvailable()
                for device in batch.devices {
                    consumer(KernelValues.event(device))
                }
                if batch.overflowed {
                    consumer(.monitorOverflowed(source: .udev))
                }
            } catch {
                problem("\(error)")
                consumer(.monitorOverflowed(source: .udev))
            }
        }
        source.resume()
        let handle = SourceHandle(source)
        return AnonymousDisposable { handle.cancel() }
    }
}

/// rtnetlink changes as session events; an overflow becomes `monitorOverflowed(.netlink)`.
public final class NetlinkEventSource: EventSource {
    private let watcher: RouteWatcher
    private let queue: DispatchQueue
    private let problem: SourceProblem

    /// Delivers `watcher`'s messages, read on `queue`.
    public init(watcher: RouteWatcher, queue: DispatchQueue, problem: @escaping SourceProblem) {
        self.watcher = watcher
        self.queue = queue
        self.problem = problem
    }

    /// Starts reading.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        let source = DispatchSource.makeReadSource(fileDescriptor: watcher.fileDescriptor, queue: queue)
        let watcher = self.watcher
        let problem = self.problem
        source.setEventHandler {
            do {
                let batch = try watcher.readAvailable()
                for message in batch.messages {
                    for event in KernelValues.events(message) {
                        consumer(event)
                    }
                }
                for malformed in batch.malformed {
                    problem("ignored a malformed rtnetlink message: \(malformed)")
                }
                if batch.overflowed || !batch.malformed.isEmpty {
                    consumer(.monitorOverflowed(source: .netlink))
                }
            } catch {
                problem("\(error)")
                consumer(.monitorOverflowed(source: .netlink))
            }
        }
        source.resume()
        let handle = SourceHandle(source)
        return AnonymousDisposable { handle.cancel() }
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
