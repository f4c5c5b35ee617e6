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
        deviceCounts = Self.deviceCounts(model)
        resyncs = model.counters.resyncs
        staleHookRunsDropped = model.counters.staleHookRunsDropped
    }
}

/// What one model change altered, sent by `Monitor` after its first reply (the whole ``StateReport``). The small
/// parts of the state come in full; of the links only those that appeared or changed, and the indexes of those that
/// went away. Contract: applying every change in order to the first state (``StateReport/applying(_:)``) gives
/// exactly the state the daemon holds; `sequence` is one more than the previous reply's.
public struct ChangeReport: Codable, Sendable, Equatable {
    /// The state's sequence after this change.
    public var sequence: Int
    /// The session phase.
    public var phase: String
    /// `offline`, `partial` or `online`.
    public var onlineState: String
    /// Links that appeared or changed, by index.
    public var links: [LinkReport]
    /// Indexes of the links that went away.
    public var removedLinks: [Int]
    /// Device counts by subsystem.
    public var deviceCounts: [String: Int]
    /// Re-enumerations after lost events.
    public var resyncs: Int
    /// Queued hook runs dropped as stale.
    public var staleHookRunsDropped: Int

    /// The change from `old` to `new`.
    public init(from old: Model, to new: Model) {
        sequence = new.changeSequence
        phase = new.phase.rawValue
        onlineState = new.onlineState.rawValue
        links = new.sortedLinks.filter { old.links[$0.index] != $0 }.map(LinkReport.init)
        removedLinks = old.links.keys.filter { new.links[$0] == nil }.sorted().map(Int.init)
        deviceCounts = StateReport.deviceCounts(new)
        resyncs = new.counters.resyncs
        staleHookRunsDropped = new.counters.staleHookRunsDropped
    }
}

extension StateReport {
    static func deviceCounts(_ model: Model) -> [String: Int] {
        model.devices.values.reduce(into: [:]) { counts, device in counts[device.subsystem, default: 0] += 1 }
    }

    /// This state with `change` applied: what a monitor holds after each reply.
    public func applying(_ change: ChangeReport) -> StateReport {
        var next = self
        next.sequence = change.sequence
        next.phase = change.phase
        next.onlineState = change.onlineState
        next.deviceCounts = change.deviceCounts
        next.resyncs = change.resyncs
        next.staleHookRunsDropped = change.staleHookRunsDropped
        let removed = Set(change.removedLinks)
        var byIndex = Dictionary(
            links.filter { !removed.contains($0.index) }.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        for link in change.links { byIndex[link.index] = link }
        next.links = byIndex.values.sorted { $0.index < $1.index }
        return next
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
