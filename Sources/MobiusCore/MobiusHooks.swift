import Locking

/// Where Mobius reports programming errors: starting a controller twice, dispatching to a disposed loop, an effect
/// that no route (or more than one) handles.
///
/// These are bugs in the code using Mobius, not conditions to recover from, so the default handler stops the
/// process with a message naming the call site. Tests replace the handler to observe misuse without crashing.
/// The handler is stored behind a lock, so replacing it from one thread while another reports is safe.
public enum MobiusHooks {
    /// Receives the message and the call site of a misuse; never returns.
    public typealias ErrorHandler = @Sendable (String, StaticString, UInt) -> Never

    /// In a struct: a bare closure kept in a generic `Locked` gains a reabstraction thunk at every access, and a
    /// process that read the handler a million times would call it through a million of them.
    private struct Handler {
        var body: ErrorHandler
    }

    private static let handler = Locked(Handler(body: { defaultErrorHandler($0, file: $1, line: $2) }))

    /// Replaces the error handler for the whole process.
    public static func setErrorHandler(_ errorHandler: @escaping ErrorHandler) {
        handler.withLock { $0.body = errorHandler }
    }

    /// Restores the handler that stops the process.
    public static func setDefaultErrorHandler() {
        setErrorHandler { defaultErrorHandler($0, file: $1, line: $2) }
    }

    /// The current handler; call it as `MobiusHooks.errorHandler(message, #file, #line)`.
    public static var errorHandler: ErrorHandler {
        handler.withLock { $0.body }
    }

    /// The default handler: stops the process with `message`, naming `file` and `line`.
    public static func defaultErrorHandler(_ message: String = "", file: StaticString, line: UInt) -> Never {
        fatalError(message, file: file, line: line)
    }
}
