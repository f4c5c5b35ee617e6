/// A count and its noun as a person writes them: `1 link`, `2 links`, `0 links`. Every message that counts uses
/// it, so no line says "1 links".
public func quantity(_ count: Int, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}

/// How many links a line about the online state names one by one (netdevd's `onlineMissing`, `netdevctl
/// wait-online`); above it the line gives their number, so that it stays a line a person reads, and that netdevd
/// makes without a pass over the links, on a host with thousands of them.
public let linksNamedPerLine = 32
