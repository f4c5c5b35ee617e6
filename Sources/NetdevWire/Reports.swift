public import SystemSupport

/// The JSON shapes of the `io.netdevd` interface, shared by the server (netdevd) and its clients (`netdevctl`).
/// Field names are stable and documented in the interface description; this module holds plain values only, so
/// a client needs neither the daemon nor the session to read them.
public struct StateReport: Codable, Sendable, Equatable {
    /// Increases with every change of links, devices, phase or configuration.
    public var sequence: Int
    /// The session phase (`running`, `resyncing`, ...).
    public var phase: String
    /// `offline`, `partial` or `online`.
    public var onlineState: String
    /// Every link.
    public var links: [LinkReport]
    /// Every device, in ``DeviceReport/precedes(_:)`` order: in `Monitor`'s first state only (`GetState` leaves
    /// it out: `ListDevices` is the query for devices).
    public var devices: [DeviceReport]?
    /// Device counts by subsystem.
    public var deviceCounts: [String: Int]
    /// Re-enumerations after lost events.
    public var resyncs: Int
    /// Queued hook runs dropped as stale.
    public var staleHookRunsDropped: Int
    /// While the host is not online: what its configuration ([Online]) still waits for, one line each
    /// (`eth0: degraded, needs routable`); absent when online.
    public var onlineMissing: [String]?

    /// A state report; the fields mean what the properties say.
    public init(
        sequence: Int, phase: String, onlineState: String, links: [LinkReport], devices: [DeviceReport]?,
        deviceCounts: [String: Int], resyncs: Int, staleHookRunsDropped: Int, onlineMissing: [String]? = nil
    ) {
        self.onlineMissing = onlineMissing
        self.sequence = sequence
        self.phase = phase
        self.onlineState = onlineState
        self.links = links
        self.devices = devices
        self.deviceCounts = deviceCounts
        self.resyncs = resyncs
        self.staleHookRunsDropped = staleHookRunsDropped
    }

    /// This state with `change` applied: what a monitor holds after each reply. Contract: from `Monitor`'s first
    /// state, applying every change in order gives exactly the state (links and devices) the daemon holds.
    public func applying(_ change: ChangeReport) -> StateReport {
        var next = self
        next.takeSmallParts(of: change)
        let removed = Set(change.removedLinks)
        var byIndex = Dictionary(
            links.filter { !removed.contains($0.index) }.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        for link in change.links { byIndex[link.index] = link }
        next.links = byIndex.values.sorted { $0.index < $1.index }
        if let devices, !change.devices.isEmpty || !change.removedDevices.isEmpty {
            let gone = Set(change.removedDevices)
            var byPath = Dictionary(
                devices.filter { !gone.contains($0.syspath) }.map { ($0.syspath, $0) },
                uniquingKeysWith: { _, last in last })
            for device in change.devices { byPath[device.syspath] = device }
            next.devices = byPath.values.sorted { $0.precedes($1) }
        }
        return next
    }
}

extension StateReport {
    /// Takes what `change` carries in full (sequence, phase, online state, counts, what the online state waits
    /// for); the links and devices are left as they are.
    public mutating func takeSmallParts(of change: ChangeReport) {
        sequence = change.sequence
        phase = change.phase
        onlineState = change.onlineState
        deviceCounts = change.deviceCounts
        resyncs = change.resyncs
        staleHookRunsDropped = change.staleHookRunsDropped
        onlineMissing = change.onlineMissing
    }
}

/// What one model change altered, sent by `Monitor` after its first reply (the whole ``StateReport``). The small
/// parts of the state come in full; of the links and devices only those that appeared or changed, and the indexes
/// (paths) of those that went away. `sequence` is one more than the previous reply's.
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
    /// Devices that appeared or changed, by sysfs path.
    public var devices: [DeviceReport]
    /// Sysfs paths of the devices that went away (a moved device: its old path, and it is among `devices`).
    public var removedDevices: [String]
    /// Device counts by subsystem.
    public var deviceCounts: [String: Int]
    /// Re-enumerations after lost events.
    public var resyncs: Int
    /// Queued hook runs dropped as stale.
    public var staleHookRunsDropped: Int
    /// What the host's online state still waits for (``StateReport/onlineMissing``); absent when online.
    public var onlineMissing: [String]?

    /// A change report; the fields mean what the properties say.
    public init(
        sequence: Int, phase: String, onlineState: String, links: [LinkReport], removedLinks: [Int],
        devices: [DeviceReport], removedDevices: [String], deviceCounts: [String: Int], resyncs: Int,
        staleHookRunsDropped: Int, onlineMissing: [String]? = nil
    ) {
        self.onlineMissing = onlineMissing
        self.sequence = sequence
        self.phase = phase
        self.onlineState = onlineState
        self.links = links
        self.removedLinks = removedLinks
        self.devices = devices
        self.removedDevices = removedDevices
        self.deviceCounts = deviceCounts
        self.resyncs = resyncs
        self.staleHookRunsDropped = staleHookRunsDropped
    }

    /// Decodes a change, reading a netdevd from before devices were in changes as "no device changed".
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sequence = try container.decode(Int.self, forKey: .sequence)
        phase = try container.decode(String.self, forKey: .phase)
        onlineState = try container.decode(String.self, forKey: .onlineState)
        links = try container.decode([LinkReport].self, forKey: .links)
        removedLinks = try container.decode([Int].self, forKey: .removedLinks)
        devices = try container.decodeIfPresent([DeviceReport].self, forKey: .devices) ?? []
        removedDevices = try container.decodeIfPresent([String].self, forKey: .removedDevices) ?? []
        deviceCounts = try container.decode([String: Int].self, forKey: .deviceCounts)
        resyncs = try container.decode(Int.self, forKey: .resyncs)
        staleHookRunsDropped = try container.decode(Int.self, forKey: .staleHookRunsDropped)
        onlineMissing = try container.decodeIfPresent([String].self, forKey: .onlineMissing)
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

    /// A link report; the fields mean what the properties say.
    public init(
        index: Int, name: String, type: String, macAddress: String?, mtu: Int?, operationalState: String,
        addresses: [String], gateways: [String]
    ) {
        self.index = index
        self.name = name
        self.type = type
        self.macAddress = macAddress
        self.mtu = mtu
        self.operationalState = operationalState
        self.addresses = addresses
        self.gateways = gateways
    }
}

/// The fields of a ``LinkReport`` that a table of links shows (`netdevctl links`): decoding only these skips, for
/// each link of a `ListLinks` reply, its addresses, gateways, hardware address and MTU.
public struct LinkRow: Decodable, Sendable, Equatable {
    /// The interface index.
    public var index: Int
    /// The name.
    public var name: String
    /// The kind.
    public var type: String
    /// networkd's operational state.
    public var operationalState: String

    /// The row of `report`.
    public init(_ report: LinkReport) {
        index = report.index
        name = report.name
        type = report.type
        operationalState = report.operationalState
    }
}

/// One device in a report, with everything udev says of it.
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
    /// udev's properties (`ID_VENDOR`, `ID_MODEL`, `ID_SERIAL`, `DEVLINKS`, ...), as `udevadm info` shows them: the
    /// session's own buffer (a JSON object of strings on the wire), so a report of 20,000 devices neither builds a
    /// dictionary for each nor sorts its keys again to write them.
    public var properties: DeviceProperties

    /// A device report; the fields mean what the properties say.
    public init(
        syspath: String, sysname: String, subsystem: String, devtype: String? = nil, devnode: String? = nil,
        driver: String? = nil, properties: DeviceProperties = [:]
    ) {
        self.syspath = syspath
        self.sysname = sysname
        self.subsystem = subsystem
        self.devtype = devtype
        self.devnode = devnode
        self.driver = driver
        self.properties = properties
    }

    /// Decodes a device, reading a netdevd from before properties were reported as "no properties".
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        syspath = try container.decode(String.self, forKey: .syspath)
        sysname = try container.decode(String.self, forKey: .sysname)
        subsystem = try container.decode(String.self, forKey: .subsystem)
        devtype = try container.decodeIfPresent(String.self, forKey: .devtype)
        devnode = try container.decodeIfPresent(String.self, forKey: .devnode)
        driver = try container.decodeIfPresent(String.self, forKey: .driver)
        properties = try container.decodeIfPresent(DeviceProperties.self, forKey: .properties) ?? [:]
    }

    /// The order an operator reads devices in: by subsystem, then kernel name (then path, for equal names).
    public func precedes(_ other: DeviceReport) -> Bool {
        (subsystem, sysname, syspath) < (other.subsystem, other.sysname, other.syspath)
    }
}

/// `CountHooks`' reply: how many hooks run for each event, by the event's name, and how many files found in the
/// hook directories are refused.
public struct HookCountsReport: Codable, Sendable, Equatable {
    /// Event name (`link-state`) to the number of hooks that run for it.
    public var hooks: [String: Int]
    /// Files found in the hook directories that are refused (not root's, writable by others, ...).
    public var refused: Int

    /// A report; the fields mean what the properties say.
    public init(hooks: [String: Int], refused: Int) {
        self.hooks = hooks
        self.refused = refused
    }
}
