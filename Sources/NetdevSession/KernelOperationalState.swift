/// The kernel's RFC 2863 operational state (IFLA_OPERSTATE), in the kernel's words.
public enum KernelOperationalState: String, Codable, Sendable, CaseIterable {
    /// IF_OPER_UNKNOWN: many virtual links (loopback, tun) report this while working.
    case unknown
    /// IF_OPER_NOTPRESENT.
    case notPresent = "notpresent"
    /// IF_OPER_DOWN.
    case down
    /// IF_OPER_LOWERLAYERDOWN.
    case lowerLayerDown = "lowerlayerdown"
    /// IF_OPER_TESTING.
    case testing
    /// IF_OPER_DORMANT.
    case dormant
    /// IF_OPER_UP.
    case up
}
