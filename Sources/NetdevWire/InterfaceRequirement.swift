/// A required interface: a glob over link names and, optionally, its own minimum state.
public struct InterfaceRequirement: Codable, Sendable, Equatable {
    /// A shell glob (`*`, `?`, `[abc]`, `[!a-z]`) over link names.
    public var pattern: String
    /// The state matching links must reach; the configuration's minimum when `nil`.
    public var minimumState: OperationalState?

    /// A requirement on links matching `pattern`.
    public init(pattern: String, minimumState: OperationalState? = nil) {
        self.pattern = pattern
        self.minimumState = minimumState
    }

    /// Parses `eth0` or `eth0:degraded`; `nil` when the state after the colon is not one of networkd's.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let pattern = parts.first, !pattern.isEmpty else { return nil }
        if parts.count == 2 {
            guard let state = OperationalState(name: parts[1]) else { return nil }
            self.init(pattern: pattern, minimumState: state)
        } else {
            self.init(pattern: pattern)
        }
    }
}
