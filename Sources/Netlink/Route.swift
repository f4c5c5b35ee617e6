/// A route as rtnetlink describes it (RTM_NEWROUTE / RTM_DELROUTE): a plain value.
public struct NetlinkRoute: Sendable, Equatable, Codable {
    /// IPv4 or IPv6.
    public var family: AddressFamily
    /// The destination network's address, `nil` for a default route.
    public var destination: String?
    /// The destination prefix length (0 for a default route).
    public var destinationPrefixLength: UInt8
    /// The next hop (RTA_GATEWAY), `nil` for directly connected routes.
    public var gateway: String?
    /// The output interface index (RTA_OIF).
    public var outputInterfaceIndex: Int32?
    /// The routing table (RTA_TABLE, or rtm_table); 254 is `main`.
    public var table: UInt32
    /// The metric (RTA_PRIORITY), `nil` when absent.
    public var metric: UInt32?
    /// RTN_* route type (1 unicast, 2 local, 3 broadcast, ...).
    public var type: UInt8
    /// RTPROT_* protocol that installed it (2 kernel, 3 boot, 4 static, 16 dhcp, ...).
    public var routingProtocol: UInt8
    /// RT_SCOPE_* scope.
    public var scope: UInt8

    /// A route value; the fields mean what the kernel's do.
    public init(
        family: AddressFamily,
        destination: String? = nil,
        destinationPrefixLength: UInt8 = 0,
        gateway: String? = nil,
        outputInterfaceIndex: Int32? = nil,
        table: UInt32 = 254,
        metric: UInt32? = nil,
        type: UInt8 = 1,
        routingProtocol: UInt8 = 0,
        scope: UInt8 = 0
    ) {
        self.family = family
        self.destination = destination
        self.destinationPrefixLength = destinationPrefixLength
        self.gateway = gateway
        self.outputInterfaceIndex = outputInterfaceIndex
        self.table = table
        self.metric = metric
        self.type = type
        self.routingProtocol = routingProtocol
        self.scope = scope
    }

    /// `true` for a default route (destination prefix length 0) of the main table.
    public var isDefault: Bool {
        destinationPrefixLength == 0 && table == 254
    }
}

extension NetlinkRoute {
    /// Reads an rtmsg and its attributes from a message payload; `nil` for families other than IPv4/IPv6.
    static func parse(_ reader: ByteReader, _ frame: NetlinkFrame) throws(NetlinkParseError) -> NetlinkRoute? {
        let start = frame.payloadOffset
        guard frame.payloadLength >= Kernel.rtmsgLength else {
            throw NetlinkParseError(offset: frame.offset, reason: "route message too short for rtmsg")
        }
        guard let family = AddressFamily(kernel: try reader.u8(at: start)) else { return nil }
        var route = NetlinkRoute(
            family: family,
            destinationPrefixLength: try reader.u8(at: start + 1),
            table: UInt32(try reader.u8(at: start + 4)),
            type: try reader.u8(at: start + 7),
            routingProtocol: try reader.u8(at: start + 5),
            scope: try reader.u8(at: start + 6)
        )
        let attributes = try NetlinkAttribute.parse(
            reader,
            from: start + Kernel.rtmsgLength,
            length: frame.payloadLength - Kernel.rtmsgLength
        )
        for attribute in attributes {
            switch attribute.type {
            case Kernel.RTA_DST:
                route.destination = try addressText(
                    attribute.bytes(reader), family: family, offset: attribute.valueOffset)
            case Kernel.RTA_GATEWAY:
                route.gateway = try addressText(attribute.bytes(reader), family: family, offset: attribute.valueOffset)
            case Kernel.RTA_OIF:
                route.outputInterfaceIndex = Int32(bitPattern: try attribute.u32(reader))
            case Kernel.RTA_PRIORITY:
                route.metric = try attribute.u32(reader)
            case Kernel.RTA_TABLE:
                route.table = try attribute.u32(reader)
            default:
                break
            }
        }
        return route
    }
}
