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

/// One Varlink interface served: its name, its description in Varlink's interface definition language, and its
/// methods by member name.
public struct VarlinkInterface: Sendable {
    /// `io.netdevd`.
    public var name: String
    /// The interface definition (`interface io.netdevd ...`).
    public var description: String
    /// The methods, by member name (`GetState`).
    public var methods: [String: VarlinkMethod]
    /// The methods' parameters, read from `description`: a call is checked against them before its method runs.
    public let signatures: [String: MethodSignature]

    /// An interface; its calls' parameters are checked against what `description` declares.
    public init(name: String, description: String, methods: [String: VarlinkMethod]) {
        self.name = name
        self.description = description
        self.methods = methods
        self.signatures = MethodSignature.parse(description)
    }
}

/// A method implementation: answer `call` through `replier` (now or later, once or, for `more`, many times).
public typealias VarlinkMethod = @Sendable (VarlinkCall, VarlinkPeer, VarlinkReplier) -> Void
