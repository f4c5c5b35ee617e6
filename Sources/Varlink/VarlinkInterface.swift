/// One Varlink interface served: its name, its description in Varlink's interface definition language, and its
/// methods by member name.
public struct VarlinkInterface: Sendable {
    /// `org.example.service`.
    public var name: String
    /// The interface definition (`interface org.example.service ...`).
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
