/// A count and its noun as a person writes them: `1 link`, `2 links`, `0 links`. Every message that counts uses
/// it, so no line says "1 links".
public func quantity(_ count: Int, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}

/// How many links a line about the online state names one by one (netdevd's `onlineMissing`, `netdevctl
/// wait-online`); above it the line gives their number, so that it stays a line a person reads, and that netdevd
/// makes without a pass over the links, on a host with thousands of them.
public let linksNamedPerLine = 32

/// The lines for a requirement's links below the state it needs (`needs`, as `routable (ipv4)`): `eth0: degraded,
/// needs routable` for each of `naming` (name and operational state), or, when `short` is more than
/// ``linksNamedPerLine``, one line with their number (`veth*: 19990 of the 20000 matching links, needs routable`).
/// netdevd's `onlineMissing` and `netdevctl wait-online` say it the same way.
public func shortLinkLines(
    pattern: String, matching: Int, short: Int, naming: [(name: String, state: String)], needs: String
) -> [String] {
    if short > linksNamedPerLine {
        return ["\(pattern): \(short) of the \(quantity(matching, "matching link")), needs \(needs)"]
    }
    return naming.map { "\($0.name): \($0.state), needs \(needs)" }
}
