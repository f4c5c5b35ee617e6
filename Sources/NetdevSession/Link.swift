/// An IP address on a link, as the session tracks it.
public struct LinkAddress: Codable, Sendable, Hashable {
    /// IPv4 or IPv6.
    public var family: AddressFamily
    /// The address text (`192.0.2.10`, `2001:db8::10`).
    public var address: String
    /// The prefix length.
    public var prefixLength: Int
    /// The kernel's scope: 0 global, 200 site, 253 link, 254 host.
    public var scope: Int
    /// Duplicate address detection has not finished (IFA_F_TENTATIVE) or failed (IFA_F_DADFAILED): not usable.
    public var isTentative: Bool

    /// An address value.
    public init(family: AddressFamily, address: String, prefixLength: Int, scope: Int = 0, isTentative: Bool = false) {
        self.family = family
        self.address = address
        self.prefixLength = prefixLength
        self.scope = scope
        self.isTentative = isTentative
    }

    /// `address/prefixLength`.
    public var cidr: String { "\(address)/\(prefixLength)" }

    /// Usable and reachable beyond the link: global or site scope, not tentative.
    public var isRoutable: Bool { !isTentative && scope < 253 }

    /// Usable on the link only: link scope, not tentative.
    public var isLinkLocal: Bool { !isTentative && scope == 253 }
}

/// IPv4 or IPv6.
public enum AddressFamily: String, Codable, Sendable, CaseIterable {
    /// IPv4.
    case ipv4
    /// IPv6.
    case ipv6
}

/// A default route through a link.
public struct DefaultRoute: Codable, Sendable, Hashable {
    /// IPv4 or IPv6.
    public var family: AddressFamily
    /// The gateway, if the route has one.
    public var gateway: String?
    /// The metric, if any.
    public var metric: Int?

    /// A default route value.
    public init(family: AddressFamily, gateway: String? = nil, metric: Int? = nil) {
        self.family = family
        self.gateway = gateway
        self.metric = metric
    }
}

/// What rtnetlink says about a link itself (RTM_NEWLINK), without its addresses or routes.
public struct LinkState: Codable, Sendable, Equatable {
    /// The interface index, the link's identity.
    public var index: Int32
    /// The interface name.
    public var name: String
    /// The link kind (`veth`, `tun`, `bridge`), `nil` for physical links and loopback.
    public var kind: String?
    /// The hardware address.
    public var macAddress: String?
    /// The MTU.
    public var mtu: Int?
    /// Administratively up (IFF_UP).
    public var isUp: Bool
    /// The driver signals carrier (IFF_LOWER_UP).
    public var hasLowerUp: Bool
    /// Loopback (IFF_LOOPBACK).
    public var isLoopback: Bool
    /// The kernel's operational state.
    public var kernelState: KernelOperationalState

    /// A link state value.
    public init(
        index: Int32,
        name: String,
        kind: String? = nil,
        macAddress: String? = nil,
        mtu: Int? = nil,
        isUp: Bool,
        hasLowerUp: Bool,
        isLoopback: Bool = false,
        kernelState: KernelOperationalState
    ) {
        self.index = index
        self.name = name
        self.kind = kind
        self.macAddress = macAddress
        self.mtu = mtu
        self.isUp = isUp
        self.hasLowerUp = hasLowerUp
        self.isLoopback = isLoopback
        self.kernelState = kernelState
    }
}

/// A link as the session knows it: its state, addresses and default routes, and what they mean.
///
/// A value with its parts in one shared, immutable box: the model's tables copy and free links by the dozen on
/// every change (a persistent table copies the node it changes), and a box is one reference to count instead of
/// five. Setting a part makes a new box; the value semantics are those of a plain struct.
public struct Link: Codable, Sendable, Equatable {
    private struct Fields: Equatable {
        var state: LinkState
        var addresses: [LinkAddress]
        var defaultRoutes: [DefaultRoute]
    }

    /// Not a generic box shared with ``Device``: a generic class's deinit runs unspecialized, looking up its
    /// metadata at every release (what made the tables' node frees costly).
    private final class Parts: Sendable {
        let fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private var parts: Parts

    /// What rtnetlink last said about the link.
    public var state: LinkState {
        get { parts.fields.state }
        set { change { $0.state = newValue } }
    }
    /// Its addresses, in the order they appeared.
    public var addresses: [LinkAddress] {
        get { parts.fields.addresses }
        set { change { $0.addresses = newValue } }
    }
    /// Its default routes.
    public var defaultRoutes: [DefaultRoute] {
        get { parts.fields.defaultRoutes }
        set { change { $0.defaultRoutes = newValue } }
    }

    /// A link with these parts.
    public init(state: LinkState, addresses: [LinkAddress] = [], defaultRoutes: [DefaultRoute] = []) {
        parts = Parts(Fields(state: state, addresses: addresses, defaultRoutes: defaultRoutes))
    }

    /// A new box with `body`'s change: the old one may be shared.
    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = parts.fields
        body(&fields)
        parts = Parts(fields)
    }

    /// The same parts (the same box, or equal parts in two).
    public static func == (lhs: Link, rhs: Link) -> Bool {
        lhs.parts === rhs.parts || lhs.parts.fields == rhs.parts.fields
    }

    private enum CodingKeys: String, CodingKey {
        case state, addresses, defaultRoutes
    }

    /// Decodes a link from its three parts.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            state: try container.decode(LinkState.self, forKey: .state),
            addresses: try container.decode([LinkAddress].self, forKey: .addresses),
            defaultRoutes: try container.decode([DefaultRoute].self, forKey: .defaultRoutes))
    }

    /// Encodes a link as its three parts.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state, forKey: .state)
        try container.encode(addresses, forKey: .addresses)
        try container.encode(defaultRoutes, forKey: .defaultRoutes)
    }

    /// The interface index.
    public var index: Int32 { state.index }
    /// The interface name.
    public var name: String { state.name }

    /// The operational state in networkd's words, derived from flags, kernel state and addresses.
    public var operationalState: OperationalState {
        guard state.isUp else { return .off }
        if state.kernelState == .dormant { return .dormant }
        let carrier =
            state.hasLowerUp && (state.kernelState == .up || state.kernelState == .unknown || state.isLoopback)
        guard carrier else { return .noCarrier }
        if addresses.contains(where: \.isRoutable) { return .routable }
        if addresses.contains(where: \.isLinkLocal) { return .degraded }
        return .carrier
    }

    /// What a one-line summary of the link shows (its metrics, a table's row), read from its box at once: unlike
    /// ``state``, which copies the whole of it, nothing is copied but the name.
    public var summary:
        (index: Int32, name: String, operationalState: OperationalState, hasCarrier: Bool, addresses: Int)
    {
        (
            parts.fields.state.index, parts.fields.state.name, operationalState, parts.fields.state.hasLowerUp,
            parts.fields.addresses.count
        )
    }

    /// `true` when the link has a usable global address of `family`.
    public func hasRoutableAddress(_ family: AddressFamily) -> Bool {
        addresses.contains { $0.family == family && $0.isRoutable }
    }
}

/// A link reflects (and dumps, as test failures show it) as its parts, not as its box: two dumps of equal links
/// read the same, and a box shared by two places in a model is shown in full in both.
extension Link: CustomReflectable {
    /// The parts, by name.
    public var customMirror: Mirror {
        Mirror(self, children: ["state": state, "addresses": addresses, "defaultRoutes": defaultRoutes])
    }
}
