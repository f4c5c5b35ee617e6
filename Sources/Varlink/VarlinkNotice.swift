import Locking

/// Something a client did that cost it its connection or a call, or a fault of the server's own, for the log.
public struct VarlinkNotice: Sendable, Equatable, CustomStringConvertible {
    /// How much it matters.
    public enum Severity: Sendable, Equatable {
        /// The server cannot do its job (it cannot accept connections).
        case error
        /// A client was refused or cut off.
        case warning
        /// Housekeeping (an idle connection closed).
        case info
    }

    /// How much it matters.
    public var severity: Severity
    /// What happened, in words, naming the peer when there is one.
    public var message: String

    /// `message`.
    public var description: String { message }
}
