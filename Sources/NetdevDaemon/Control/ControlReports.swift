public import NetdevSession
public import NetdevWire

/// The reports of a model: how the session's values become the `io.netdevd` interface's (``NetdevWire``).
extension StateReport {
    /// The report of `model`; with `devices`, every device too (`Monitor`'s first reply).
    public init(_ model: Model, devices: Bool = false) {
        self.init(
            sequence: model.changeSequence,
            phase: model.phase.rawValue,
            onlineState: model.onlineState.rawValue,
            links: model.sortedLinks.map(LinkReport.init),
            devices: devices ? Self.devices(model) : nil,
            deviceCounts: Self.deviceCounts(model),
            resyncs: model.counters.resyncs,
            staleHookRunsDropped: model.counters.staleHookRunsDropped,
            onlineMissing: Self.onlineMissing(model)
        )
    }

    /// What the online state waits for, when the host is not online.
    static func onlineMissing(_ model: Model) -> [String]? {
        model.onlineState == .online
            ? nil : OnlineEvaluation.missing(of: model.links.values, configuration: model.configuration)
    }

    static func deviceCounts(_ model: Model) -> [String: Int] {
        model.devices.values.reduce(into: [:]) { counts, device in counts[device.subsystem, default: 0] += 1 }
    }

    /// Every device of `model`, in the order an operator reads (``DeviceReport/precedes(_:)``).
    static func devices(_ model: Model) -> [DeviceReport] {
        model.devices.values.map(DeviceReport.init).sorted { $0.precedes($1) }
    }
}

extension ChangeReport {
    /// The change from `old` to `new`.
    public init(from old: Model, to new: Model) {
        self.init(
            sequence: new.changeSequence,
            phase: new.phase.rawValue,
            onlineState: new.onlineState.rawValue,
            links: new.sortedLinks.filter { old.links[$0.index] != $0 }.map(LinkReport.init),
            removedLinks: old.links.keys.filter { new.links[$0] == nil }.sorted().map(Int.init),
            devices: new.devices.values.filter { old.devices[$0.syspath] != $0 }.map(DeviceReport.init)
                .sorted { $0.precedes($1) },
            removedDevices: old.devices.keys.filter { new.devices[$0] == nil }.sorted(),
            deviceCounts: StateReport.deviceCounts(new),
            resyncs: new.counters.resyncs,
            staleHookRunsDropped: new.counters.staleHookRunsDropped,
            onlineMissing: StateReport.onlineMissing(new)
        )
    }
}

extension LinkReport {
    /// The report of `link`.
    public init(_ link: Link) {
        self.init(
            index: Int(link.index),
            name: link.name,
            type: link.state.kind ?? (link.state.isLoopback ? "loopback" : "ether"),
            macAddress: link.state.macAddress,
            mtu: link.state.mtu,
            operationalState: link.operationalState.rawValue,
            addresses: link.addresses.map(\.cidr),
            gateways: link.defaultRoutes.map { $0.gateway ?? "" }
        )
    }
}

extension DeviceReport {
    /// The report of `device`.
    public init(_ device: Device) {
        self.init(
            syspath: device.syspath, sysname: device.sysname, subsystem: device.subsystem, devtype: device.devtype,
            devnode: device.devnode, driver: device.driver, properties: device.properties)
    }
}
