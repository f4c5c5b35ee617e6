/// An IP address on a link as rtnetlink describes it (RTM_NEWADDR / RTM_DELADDR): a plain value.
public struct NetlinkAddress: Sendable, Equatable, Codable {
    /// The link's interface index.
    public var interfaceIndex: Int32
    /// IPv4 or IPv6.
    public var family: AddressFamily
    /// The address (`192.0.2.10`, `2001:db8::10`): IFA_LOCAL when present (the local end on point-to-point
    /// links), IFA_ADDRESS otherwise.
    public var address: String
    /// The prefix length (24 for a /24).
    public var prefixLength: UInt8
    /// The scope (RT_SCOPE_*: 0 universe/global, 200 site, 253 link, 254 host).
    public var scope: UInt8
    /// IFA_F_* flags (from IFA_FLAGS when present, the 8-bit ifa_flags otherwise).
    public var flags: AddressFlags
    /// The IPv4 label (IFA_LABEL), such as `eth0:1`.
    public var label: String?

    /// An address value; the fields mean what the kernel's do.
    public init(
        interfaceIndex: Int32,
        family: AddressFamily,
        address: String,
        prefixLength: UInt8,
        scope: UInt8 = 0,
        flags: AddressFlags = [],
        label: String? = nil
    ) {
        self.interfaceIndex = interfaceIndex
        self.family = family
        self.address = address
        self.prefixLength = prefixLength
        self.scope = scope
        self.flags = flags
        self.label = label
    }

    /// `address/prefixLength`.
    public var cidr: String {
        "\(address)/\(prefixLength)"
    }
}

/// IFA_F_* address flags.
public struct AddressFlags: OptionSet, Sendable, Codable, Hashable {
    /// The raw IFA_F_* bits.
    public let rawValue: UInt32

    /// Flags from raw IFA_F_* bits.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// IFA_F_SECONDARY (IPv4) / IFA_F_TEMPORARY (IPv6).
    public static let secondary = AddressFlags(rawValue: 0x01)
    /// IFA_F_NODAD.
    public static let noDAD = AddressFlags(rawValue: 0x02)
    /// IFA_F_DADFAILED.
    public static let dadFailed = AddressFlags(rawValue: 0x08)
    /// IFA_F_DEPRECATED.
    public static let deprecated = AddressFlags(rawValue: 0x20)
    /// IFA_F_TENTATIVE: duplicate address detection has not finished; not usable yet.
    public static let tentative = AddressFlags(rawValue: 0x40)
    /// IFA_F_PERMANENT: configured, not learned.
    public static let permanent = AddressFlags(rawValue: 0x80)
    /// IFA_F_NOPREFIXROUTE.
    public static let noPrefixRoute = AddressFlags(rawValue: 0x200)
}

extension NetlinkAddress {
    /// Reads an ifaddrmsg and its attributes from a message payload; `nil` for families other than IPv4/IPv6.
    static func parse(_ reader: ByteReader, _ frame: NetlinkFrame) throws(NetlinkParseError) -> NetlinkAddress? {
        let start = frame.payloadOffset
        guard frame.payloadLength >= Kernel.ifaddrmsgLength else {
            throw NetlinkParseError(offset: frame.offset, reason: "address message too short for ifaddrmsg")
        }
        guard let family = AddressFamily(kernel: try reader.u8(at: start)) else { return nil }
        var flags = AddressFlags(rawValue: UInt32(try reader.u8(at: start + 2)))
        var local: String?
        var address: String?
        var label: String?
        let attributes = try NetlinkAttribute.parse(
            reader,
            from: start + Kernel.ifaddrmsgLength,
            length: frame.payloadLength - Kernel.ifaddrmsgLength
        )
        for attribute in attributes {
            switch attribute.type {
            case Kernel.IFA_LOCAL:
                local = try addressText(attribute.bytes(reader), family: family, offset: attribute.valueOffset)
            case Kernel.IFA_ADDRESS:
                address = try addressText(attribute.bytes(reader), family: family, offset: attribute.valueOffset)
            case Kernel.IFA_LABEL:
                label = try attribute.string(reader)
            case Kernel.IFA_FLAGS:
                flags = AddressFlags(rawValue: try attribute.u32(reader))
            default:
                break
            }
        }
        guard let text = local ?? address else {
            throw NetlinkParseError(offset: start, reason: "address message without IFA_LOCAL or IFA_ADDRESS")
        }
        return NetlinkAddress(
            interfaceIndex: Int32(bitPattern: try reader.u32(at: start + 4)),
            family: family,
            address: text,
            prefixLength: try reader.u8(at: start + 1),
            scope: try reader.u8(at: start + 3),
            flags: flags,
            label: label
        )
    }
}
