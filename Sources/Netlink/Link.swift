/// A network link as rtnetlink describes it (RTM_NEWLINK / RTM_DELLINK): a plain value.
public struct NetlinkLink: Sendable, Equatable, Codable {
    /// The kernel's interface index, the link's identity.
    public var index: Int32
    /// The interface name (IFLA_IFNAME).
    public var name: String
    /// The link kind from IFLA_LINKINFO (`veth`, `tun`, `bridge`, ...), `nil` for physical devices and loopback.
    public var kind: String?
    /// The hardware address in `aa:bb:cc:dd:ee:ff` form, `nil` when the link has none.
    public var macAddress: String?
    /// The MTU in bytes.
    public var mtu: UInt32?
    /// The IFF_* flags (ifi_flags).
    public var flags: InterfaceFlags
    /// RFC 2863 operational state (IFLA_OPERSTATE).
    public var operationalState: OperationalState
    /// Whether the link has carrier (IFLA_CARRIER), when the kernel says.
    public var carrier: Bool?
    /// The ARPHRD_* hardware type (ifi_type): 1 for Ethernet, 772 for loopback.
    public var hardwareType: UInt16

    /// A link value; the fields mean what the kernel's do.
    public init(
        index: Int32,
        name: String,
        kind: String? = nil,
        macAddress: String? = nil,
        mtu: UInt32? = nil,
        flags: InterfaceFlags = [],
        operationalState: OperationalState = .unknown,
        carrier: Bool? = nil,
        hardwareType: UInt16 = 1
    ) {
        self.index = index
        self.name = name
        self.kind = kind
        self.macAddress = macAddress
        self.mtu = mtu
        self.flags = flags
        self.operationalState = operationalState
        self.carrier = carrier
        self.hardwareType = hardwareType
    }
}

/// The IFF_* interface flags the rest of netdevd cares about.
public struct InterfaceFlags: OptionSet, Sendable, Codable, Hashable {
    /// The raw IFF_* bits.
    public let rawValue: UInt32

    /// Flags from raw IFF_* bits.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// IFF_UP: administratively up.
    public static let up = InterfaceFlags(rawValue: 0x1)
    /// IFF_BROADCAST.
    public static let broadcast = InterfaceFlags(rawValue: 0x2)
    /// IFF_LOOPBACK.
    public static let loopback = InterfaceFlags(rawValue: 0x8)
    /// IFF_POINTOPOINT.
    public static let pointToPoint = InterfaceFlags(rawValue: 0x10)
    /// IFF_RUNNING: operationally up (RFC 2863 "up").
    public static let running = InterfaceFlags(rawValue: 0x40)
    /// IFF_NOARP.
    public static let noARP = InterfaceFlags(rawValue: 0x80)
    /// IFF_MULTICAST.
    public static let multicast = InterfaceFlags(rawValue: 0x1000)
    /// IFF_LOWER_UP: the driver signals carrier.
    public static let lowerUp = InterfaceFlags(rawValue: 0x10000)
    /// IFF_DORMANT.
    public static let dormant = InterfaceFlags(rawValue: 0x20000)
}

/// RFC 2863 operational states, as IFLA_OPERSTATE carries them; the names are those `ip link` prints.
public enum OperationalState: UInt8, Sendable, Codable, CaseIterable {
    /// IF_OPER_UNKNOWN (loopback, tun and many virtual devices report this when working).
    case unknown = 0
    /// IF_OPER_NOTPRESENT.
    case notPresent = 1
    /// IF_OPER_DOWN.
    case down = 2
    /// IF_OPER_LOWERLAYERDOWN.
    case lowerLayerDown = 3
    /// IF_OPER_TESTING.
    case testing = 4
    /// IF_OPER_DORMANT.
    case dormant = 5
    /// IF_OPER_UP.
    case up = 6

    /// The name `ip link` prints: `UNKNOWN`, `DOWN`, `LOWERLAYERDOWN`, `UP`, ...
    public var kernelName: String {
        switch self {
        case .unknown: "UNKNOWN"
        case .notPresent: "NOTPRESENT"
        case .down: "DOWN"
        case .lowerLayerDown: "LOWERLAYERDOWN"
        case .testing: "TESTING"
        case .dormant: "DORMANT"
        case .up: "UP"
        }
    }
}

extension NetlinkLink {
    /// Reads an ifinfomsg and its attributes from a message payload.
    static func parse(_ reader: ByteReader, _ frame: NetlinkFrame) throws(NetlinkParseError) -> NetlinkLink {
        let start = frame.payloadOffset
        guard frame.payloadLength >= Kernel.ifinfomsgLength else {
            throw NetlinkParseError(offset: frame.offset, reason: "link message too short for ifinfomsg")
        }
        var link = NetlinkLink(
            index: try reader.i32(at: start + 4),
            name: "",
            flags: InterfaceFlags(rawValue: try reader.u32(at: start + 8)),
            hardwareType: try reader.u16(at: start + 2)
        )
        let attributes = try NetlinkAttribute.parse(
            reader,
            from: start + Kernel.ifinfomsgLength,
            length: frame.payloadLength - Kernel.ifinfomsgLength
        )
        for attribute in attributes {
            switch attribute.type {
            case Kernel.IFLA_IFNAME:
                link.name = try attribute.string(reader)
            case Kernel.IFLA_ADDRESS:
                let bytes = try attribute.bytes(reader)
                link.macAddress = bytes.isEmpty ? nil : hardwareAddress(bytes)
            case Kernel.IFLA_MTU:
                link.mtu = try attribute.u32(reader)
            case Kernel.IFLA_OPERSTATE:
                link.operationalState = OperationalState(rawValue: try attribute.u8(reader)) ?? .unknown
            case Kernel.IFLA_CARRIER:
                link.carrier = try attribute.u8(reader) != 0
            case Kernel.IFLA_LINKINFO:
                let nested = try NetlinkAttribute.parse(
                    reader, from: attribute.valueOffset, length: attribute.valueLength)
                if let kind = nested.first(where: { $0.type == Kernel.IFLA_INFO_KIND }) {
                    link.kind = try kind.string(reader)
                }
            default:
                break
            }
        }
        guard !link.name.isEmpty else {
            throw NetlinkParseError(offset: start, reason: "link \(link.index) has no IFLA_IFNAME")
        }
        return link
    }
}

/// A hardware address as `ip link` shows it: lowercase hex bytes joined by colons. Written as bytes: every link
/// message of a burst carries one, and making a string of each digit cost more than the rest of the parse.
private func hardwareAddress(_ bytes: some Collection<UInt8>) -> String {
    var text: [UInt8] = []
    text.reserveCapacity(bytes.count * 3)
    for byte in bytes {
        if !text.isEmpty { text.append(UInt8(ascii: ":")) }
        text.append(hexDigits[Int(byte >> 4)])
        text.append(hexDigits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
}

private let hexDigits = Array("0123456789abcdef".utf8)
