/// Who is at the other end of a connection (SO_PEERCRED).
public struct VarlinkPeer: Sendable, Equatable, CustomStringConvertible {
    /// The peer's process id.
    public var pid: Int32
    /// The peer's user id.
    public var uid: UInt32
    /// The peer's group id.
    public var gid: UInt32

    /// A peer with these credentials (the server reads them with `SO_PEERCRED`).
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// `pid 123 (uid 1000)`.
    public var description: String { "pid \(pid) (uid \(uid))" }
}
