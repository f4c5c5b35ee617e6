public import NetdevSession

/// The JSON shapes of the `io.netdevd` interface, shared by the server and `netdevctl`. Field names are stable
/// and documented in the interface description.
public struct StateReport: Codable, Sendable, Equatable {
    /// Increases with every change of links, devices, phase or configuration.
    public var sequence: Int
    /// The session phase (`running`, `resyncing`, ...).
    public var phase: String
    /// `offline`, `partial` or `online`.
    public var onlineState: String
    /// Every link.
    public var links: [LinkReport]
    /// Device counts by subsystem.
    public var deviceCounts: [String: Int]
    /// Re-enumerations after lost events.
    public var resyncs: Int
    /// Queued hook runs dropped as stale.
    public var staleHookRunsDropped: Int

    /// The report of `model`.
    public init(_ model: Model) {
        sequence = model.changeSequence
        phase = model.phase.rawValue
        onlineState = model.onlineState.rawValue
        links = model.sortedLinks.map(LinkReport.init)
        deviceCounts = Dictionary(grouping: model.devices.values, by: \.subsystem).mapValues(\.count)
        resyncs = model.counters.resyncs
        staleHookRunsDropped = model.counters.staleHookRunsDropped
    }
}

/// One link in a report.
public struct LinkReport: Codable, Sendable, Equatable {
    /// The interface index.
    public var index: Int
    /// The name.
    public var name: String
    /// The kind (`veth`, `tun`, ...), or `ether`/`loopback` when the kernel gives none.
    public var type: String
    /// The hardware address.
    public var macAddress: String?
    /// The MTU.
    public var mtu: Int?
    /// networkd's operational state.
    public var operationalState: String
    /// `address/prefix` of each address.
    public var addresses: [String]
    /// The gateways of its default routes (empty string for a route without a gateway).
    public var gateways: [String]

    /// The report of `link`.
    public init(_ link: Link) {
        index = Int(link.index)
        name = link.name
        type = link.state.kind ?? (link.state.isLoopback ? "loopback" : "ether")
        macAddress = link.state.macAddress
        mtu = link.state.mtu
        operationalState = link.operationalState.rawValue
        addresses = link.addresses.map(\.cidr)
        gateways = link.defaultRoutes.map { $0.gateway ?? "" }
    }
}

/// One device in a report.
public struct DeviceReport: Codable, Sendable, Equatable {
    /// The sysfs path.
    public var syspath: String
    /// The kernel name.
    public var sysname: String
    /// The subsystem.
    public var subsystem: String
    /// The device type.
    public var devtype: String?
    /// The device node.
    public var devnode: String?
    /// The driver.
    public var driver: String?

    /// The report of `device`.
    public init(_ device: Device) {
        syspath = device.syspath
        sysname = device.sysname
        subsystem = device.subsystem
        devtype = device.devtype
        devnode = device.devnode
        driver = device.driver
    }
}
