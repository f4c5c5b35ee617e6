import JSONCoding
import NetdevSession

#if canImport(Glibc)
import Glibc
#endif

/// The environment networkd-dispatcher 2.2 gives its scripts, built from netdevd's model instead of from
/// `networkctl status`: `ADDR`, `ESSID`, `IP_ADDRS`, `IP6_ADDRS`, `IFACE`, `STATE`, `AdministrativeState`,
/// `OperationalState` and `json`, with the values networkd-dispatcher computes from the same facts.
///
/// - Addresses are listed as networkctl lists them: IPv4 before IPv6, wider scope first, without prefix lengths,
///   tentative ones included. `ADDR` is the first, `IP_ADDRS` the IPv4 ones but 127.*, `IP6_ADDRS` the IPv6 ones
///   but fe80:*.
/// - `json` is Python's `json.dumps(..., sort_keys=True)` of networkd-dispatcher's data: `Type`, `InterfaceName`,
///   `OperationalState`, `AdministrativeState`, `State` (`routable (configured)`), and of networkctl's status
///   lines those netdevd knows: `Address`, `Gateway`, `Hardware Address`, `Kind`. A link that is gone has only
///   the first five, as networkctl has nothing to say of it.
/// - `ESSID` is empty: netdevd does not ask wireless tools.
enum DispatcherEnvironment {
    /// The names a script is given (besides the runner's `PATH` and `LANG`): the only ones the hook runner passes.
    static let names: Set<String> = [
        "ADDR", "ESSID", "IP_ADDRS", "IP6_ADDRS", "IFACE", "STATE", "AdministrativeState", "OperationalState", "json",
    ]

    /// `NAME=value` entries for `run`, in networkd-dispatcher's order.
    static func variables(for run: DispatcherRun) -> [String] {
        let addresses = run.linkIsGone ? [] : listed(run.link.addresses)
        let ipv4 = addresses.filter { $0.family == .ipv4 && !$0.address.hasPrefix("127.") }.map(\.address)
        let ipv6 = addresses.filter { $0.family == .ipv6 && !$0.address.hasPrefix("fe80:") }.map(\.address)
        return [
            "ADDR=" + (addresses.first?.address ?? ""),
            "ESSID=",
            "IP_ADDRS=" + ipv4.joined(separator: " "),
            "IP6_ADDRS=" + ipv6.joined(separator: " "),
            "IFACE=" + run.link.name,
            "STATE=" + run.state,
            "AdministrativeState=" + run.administrativeState,
            "OperationalState=" + run.operationalState,
            "json=" + json(for: run, addresses: addresses),
        ]
    }

    /// networkctl's order: IPv4 first, then by scope (global before link), then by the address's bytes.
    static func listed(_ addresses: [LinkAddress]) -> [LinkAddress] {
        addresses.map { ($0, bytes(of: $0)) }.sorted { lhs, rhs in
            let left = (lhs.0.family == .ipv4 ? 0 : 1, lhs.0.scope)
            let right = (rhs.0.family == .ipv4 ? 0 : 1, rhs.0.scope)
            return left != right ? left < right : lhs.1.lexicographicallyPrecedes(rhs.1)
        }.map(\.0)
    }

    /// The address in network byte order (its text's bytes when it does not parse).
    private static func bytes(of address: LinkAddress) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 16)
        let family = address.family == .ipv4 ? AF_INET : AF_INET6
        guard inet_pton(family, address.address, &buffer) == 1 else { return Array(address.address.utf8) }
        return Array(buffer.prefix(address.family == .ipv4 ? 4 : 16))
    }

    /// networkctl's order of gateways: IPv4 first, then by metric.
    static func gateways(of link: Link) -> [String] {
        link.defaultRoutes.filter { $0.gateway != nil }.enumerated().sorted { lhs, rhs in
            let left = (lhs.element.family == .ipv4 ? 0 : 1, lhs.element.metric ?? 0, lhs.offset)
            let right = (rhs.element.family == .ipv4 ? 0 : 1, rhs.element.metric ?? 0, rhs.offset)
            return left < right
        }.compactMap(\.element.gateway)
    }

    /// networkctl's `Type`: the loopback, a kind whose udev DEVTYPE names it, or `ether`.
    static func type(of link: Link) -> String {
        if link.state.isLoopback { return "loopback" }
        let named: Set<String> = ["bridge", "bond", "vlan", "vxlan", "wireguard", "wlan", "ppp", "team"]
        if let kind = link.state.kind, named.contains(kind) { return kind }
        return "ether"
    }

    private static func json(for run: DispatcherRun, addresses: [LinkAddress]) -> String {
        let link = run.link
        var fields: [(String, JSONField)] = [
            ("AdministrativeState", .text(run.administrativeState)),
            ("InterfaceName", .text(link.name)),
            ("OperationalState", .text(run.operationalState)),
            ("State", .text("\(run.operationalState) (\(run.administrativeState))")),
            ("Type", .text(type(of: link))),
        ]
        if !run.linkIsGone {
            if !addresses.isEmpty { fields.append(("Address", .list(addresses.map(\.address)))) }
            let gateways = gateways(of: link)
            if !gateways.isEmpty { fields.append(("Gateway", .list(gateways))) }
            if let mac = link.state.macAddress, !mac.isEmpty { fields.append(("Hardware Address", .list([mac]))) }
            if let kind = link.state.kind, !kind.isEmpty { fields.append(("Kind", .list([kind]))) }
        }
        fields.sort { JSONOutput.utf8Precedes($0.0, $1.0) }
        let members = fields.map { name, value in quoted(name) + ": " + value.text }
        return "{" + members.joined(separator: ", ") + "}"
    }

    private enum JSONField {
        case text(String)
        case list([String])

        var text: String {
            switch self {
            case .text(let value): DispatcherEnvironment.quoted(value)
            case .list(let values): "[" + values.map(DispatcherEnvironment.quoted).joined(separator: ", ") + "]"
            }
        }
    }

    /// A JSON string as Python's json.dumps writes it (ensure_ascii: every non-ASCII character as \uXXXX).
    static func quoted(_ value: String) -> String {
        var out = "\""
        for unit in value.utf16 {
            switch unit {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out + "\""
    }
}
