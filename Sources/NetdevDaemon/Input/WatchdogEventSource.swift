internal import CLinux
public import Dispatch
public import MobiusCore
public import NetdevSession
import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

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
        let handle = DispatchSourceHandle(timer)
        return AnonymousDisposable { handle.cancel() }
    }
}
