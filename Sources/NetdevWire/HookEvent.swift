/// The event a hook run reports, its first argument and `NETDEVD_EVENT`.
public enum HookEvent: String, Codable, Sendable, CaseIterable {
    /// A link appeared.
    case linkAdded = "link-added"
    /// A link's operational state changed.
    case linkState = "link-state"
    /// A link disappeared.
    case linkRemoved = "link-removed"
    /// A tracked device appeared.
    case deviceAdded = "device-added"
    /// A tracked device changed.
    case deviceChanged = "device-changed"
    /// A tracked device disappeared.
    case deviceRemoved = "device-removed"
    /// A tracked device was renamed or moved (`NETDEVD_PREV_DEVPATH` is where it was).
    case deviceMoved = "device-moved"
    /// The host's online state changed.
    case onlineState = "online-state"
}
