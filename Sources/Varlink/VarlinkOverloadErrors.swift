import Locking

/// The errors a server sends a client it sheds for its own protection. Their names belong to the interface the
/// server's clients know (which should declare them), so a client can tell them apart from a method's own errors.
public struct VarlinkOverloadErrors: Sendable, Equatable {
    /// Sent before closing a connection whose replies went unread past ``VarlinkLimits/maximumPendingOutputBytes``,
    /// or of which none was read for ``VarlinkLimits/idleTimeoutMilliseconds``.
    public var clientTooSlow: String
    /// Sent to a connection refused when it is accepted (too many connections, or no descriptor left), with a
    /// `reason` parameter.
    public var tooManyConnections: String

    /// `<interface>.ClientTooSlow` and `<interface>.TooManyConnections`.
    public init(interface: String) {
        clientTooSlow = interface + ".ClientTooSlow"
        tooManyConnections = interface + ".TooManyConnections"
    }
}
