public import Dispatch

/// A Dispatch source kept by whoever must cancel it later, from any thread. `@unchecked Sendable`: libdispatch
/// sources may be cancelled, suspended and resumed from any thread (those calls are thread-safe), and nothing else is
/// done with the source after set-up.
public final class DispatchSourceHandle: @unchecked Sendable {
    private let source: any DispatchSourceProtocol

    /// Keeps `source` (set up and resumed by the caller).
    public init(_ source: any DispatchSourceProtocol) {
        self.source = source
    }

    /// Cancels the source: its handler is not called again.
    public func cancel() {
        source.cancel()
    }

    /// Stops the source's handler until ``resume()``.
    public func suspend() {
        source.suspend()
    }

    /// Lets the source's handler run again after ``suspend()``.
    public func resume() {
        source.resume()
    }
}
