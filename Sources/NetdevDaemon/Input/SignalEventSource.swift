internal import CLinux
public import Dispatch
public import MobiusCore
public import NetdevSession
import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM, SIGINT and SIGHUP as session events. They must be blocked in every thread (``Daemon/run()`` blocks
/// them before anything starts), so that none takes its default action and each waits, pending, until read here.
public final class SignalEventSource: EventSource {
    private let queue: DispatchQueue

    /// Signals handled on `queue`.
    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    /// Starts handling the signals.
    public func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        // The signals are blocked in every thread since ProcessSetup.prepare(), so they stay pending until read here
        // (libdispatch reads them with signalfd), including those that arrived during start-up. Setting SIG_IGN now
        // would discard those.
        let handles = [(SIGTERM, Signal.terminate), (SIGINT, .interrupt), (SIGHUP, .hangUp)].map { number, signal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { consumer(.signalReceived(signal)) }
            source.resume()
            return DispatchSourceHandle(source)
        }
        return AnonymousDisposable {
            for handle in handles { handle.cancel() }
        }
    }
}
