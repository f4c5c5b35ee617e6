import Locking

/// The server's limits: what one local client, hostile or broken, can cost the daemon.
///
/// Memory per connection is bounded by ``maximumMessageBytes`` (input), ``maximumPendingCalls`` (calls read but
/// not yet answered; past it the connection is not read until replies are taken, so a client that pipelines
/// without reading blocks in its own `send`) and ``maximumPendingOutputBytes`` (replies not yet read). The number
/// of connections is bounded per uid and overall, with root counted apart, so no other user can lock root's
/// tools out.
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
    /// Replies waiting for a slow reader, in bytes; past this those not begun are dropped, the client is told
    /// ``VarlinkOverloadErrors/clientTooSlow`` after the one it is reading, and the connection closes.
    public var maximumPendingOutputBytes = 4 << 20
    /// How long a connection may stay open with no call in progress before it is closed, in milliseconds (checked
    /// every quarter of it); 0 keeps it open. A client that reads none of its replies for as long is told it is too
    /// slow, as past ``maximumPendingOutputBytes`` (and closed if it still reads nothing for as long again while
    /// more than 64 KiB of a large reply it began wait).
    public var idleTimeoutMilliseconds = 60_000

    /// The defaults: 1 MiB messages; 64 connections of non-root users, 32 per uid, and 512 of root's; 64 pending
    /// calls (1 MiB of them at most) and 4 MiB of pending output per connection; 60 s idle or without reading.
    public init() {}
}
