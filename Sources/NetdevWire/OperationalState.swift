/// A link's operational state in systemd-networkd's words, as `networkctl` prints them, ordered from least to
/// most connected: `off < no-carrier < dormant < carrier < degraded < routable`.
///
/// - `off`: the link is administratively down.
/// - `no-carrier`: up, but the lower layer reports no carrier (cable out, peer down).
/// - `dormant`: up with carrier, but waiting for an external event (802.1X, for example).
/// - `carrier`: carrier, but no usable address (loopback's host-scope addresses do not count).
/// - `degraded`: carrier and only link-local addresses.
/// - `routable`: carrier and at least one usable global (or site) address.
public enum OperationalState: String, Codable, Sendable, CaseIterable, Comparable {
    /// Administratively down.
    case off
    /// Up without carrier.
    case noCarrier = "no-carrier"
    /// Carrier, waiting for an external event.
    case dormant
    /// Carrier, no usable address.
    case carrier
    /// Carrier and link-local addresses only.
    case degraded
    /// Carrier and a usable global address.
    case routable

    /// States compare by how connected they are.
    public static func < (lhs: OperationalState, rhs: OperationalState) -> Bool {
        rank(lhs) < rank(rhs)
    }

    private static func rank(_ state: OperationalState) -> Int {
        allCases.firstIndex(of: state) ?? 0
    }

    /// The state named `text` in networkd's words (`routable`, `no-carrier`, ...), or `nil`.
    public init?(name text: String) {
        self.init(rawValue: text)
    }
}

/// The whole host's connectivity, in networkd's words: `offline`, `partial` or `online`.
public enum OnlineState: String, Codable, Sendable, CaseIterable {
    /// No required link (or, without requirements, no link at all) reaches its minimum state.
    case offline
    /// Some required links reach their minimum state, not all.
    case partial
    /// Every required link (or, without requirements, at least one link) reaches its minimum state.
    case online
}
