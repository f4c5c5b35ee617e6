import Locking

/// The server's limits: what one local client, hostile or broken, can cost the daemon.
///
/// Memory per connection is bounded by ``maximumMessageBytes`` (input), ``maximumPendingCalls`` (calls read but
/// not yet answered; past it the connection is not read until replies are taken, so a client that pipelines
/// without reading blocks in its own `send`) and ``maximumPendingOutputBytes`` (replies not yet read). The number
/// of connections is bounded per uid and overall, with root counted apart, so no other user can lock root's
/// `netdevctl` out.
public struct VarlinkLimits: Sendable {
    /// The longest message accepted; a longer one closes the connection.
    public var maximumMessageBytes = 1 << 20
    /// Connections of users other than root accepted at once; more are refused. With the other limits, what they
    /// can hold at worst is about 6.5 MiB each (a message being read, 1 MiB of calls waiting, 4 MiB of replies and
    /// the one being added): some 420 MiB for 64.
    public var maximumConnections = 64
    /// Connections one uid other than root may have open at once; more are refused.
    public var maximumConnectionsPerUser = 32
    /// Connections root may have open at once, counted apart from everyone else's: whatever other users hold,
    /// root has this many; more are refused.
    public var maximumRootConnections = 512
    /// Calls read from one connection and not yet answered; past this, or past ``maximumMessageBytes`` of them, the
    /// connection is not read until they are.
    public var maximumPendingCalls = 64
    /// Replies waiting for a slow reader, in bytes; past this the call gets an error and the connection closes.
    public var maximumPendingOutputBytes = 4 << 20
    /// How long a connection may stay open with no call in progress, or with replies its client reads none of,
    /// before it is closed, in milliseconds (checked every quarter of it); 0 keeps it open.
    public var idleTimeoutMilliseconds = 60_000

    /// The defaults: 1 MiB messages; 64 connections of non-root users, 32 per uid, and 512 of root's; 64 pending
    /// calls (1 MiB of them at most) and 4 MiB of pending output per connection; 60 s idle or without reading.
    public init() {}
}

/// The errors a server sends a client it sheds for its own protection. Their names belong to the interface the
/// server's clients know (which should declare them), so a client can tell them apart from a method's own errors.
public struct VarlinkOverloadErrors: Sendable, Equatable {
    /// Sent before closing a connection whose replies went unread past ``VarlinkLimits/maximumPendingOutputBytes``.
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

/// Lets a kind of notice through at most once per interval and counts those held back, so that a client repeating
/// an offence costs one log line per interval, not one per offence. (A count is said with the next notice of its
/// kind let through; if none comes, it is not said.)
public final class NoticeThrottle: Sendable {
    private let last = Locked<[String: (said: UInt64, heldBack: Int)]>([:])
    private let intervalNanoseconds: UInt64

    /// A throttle letting one notice of each kind through every `intervalSeconds`.
    public init(intervalSeconds: UInt64 = 10) {
        intervalNanoseconds = intervalSeconds * 1_000_000_000
    }

    /// `nil` when a notice of `kind` now is held back; otherwise how many were held back since the last one.
    public func admit(_ kind: String) -> Int? {
        last.withLock { last -> Int? in
            let now = Connection.monotonicNanoseconds()
            if let previous = last[kind], now >= previous.said, now - previous.said < intervalNanoseconds {
                last[kind]?.heldBack += 1
                return nil
            }
            defer { last[kind] = (now, 0) }
            return last[kind]?.heldBack ?? 0
        }
    }

    /// " (and 3 more like it in the last 10 s)" for a count above 0, else nothing.
    public static func suffix(_ heldBack: Int) -> String {
        heldBack > 0 ? " (and \(heldBack) more like it in the last 10 s)" : ""
    }
}
