import JSONCoding
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
            deviceCounts: model.deviceCounts,
            resyncs: model.counters.resyncs,
            staleHookRunsDropped: model.counters.staleHookRunsDropped,
            onlineMissing: model.onlineMissing
        )
    }

    /// Every device of `model`, in the order an operator reads (``DeviceReport/precedes(_:)``).
    static func devices(_ model: Model) -> [DeviceReport] {
        model.devices.values.map(DeviceReport.init).sorted { $0.precedes($1) }
    }
}

extension ChangeReport {
    /// The change from `old` to `new`. When `new` follows `old` (the next change sequence) it is built from what the
    /// session noted (``Model/lastChange``): O(log n) for each link or device it names, and nothing for the rest.
    /// Otherwise, or after a resync, the two models are compared whole. `missing` is `old`'s report's
    /// ``StateReport/onlineMissing``, reused when the change cannot have altered it.
    public init(from old: Model, to new: Model, oldMissing missing: [String]?? = nil) {
        let follows = new.changeSequence == old.changeSequence + 1 && !new.lastChange.everything
        let linkIndexes =
            follows ? new.lastChange.links.sorted() : Array(Set(old.links.keys).union(new.links.keys)).sorted()
        let devicePaths = follows ? new.lastChange.devices : Array(Set(old.devices.keys).union(new.devices.keys))
        var links: [LinkReport] = []
        var removedLinks: [Int] = []
        for index in linkIndexes where old.links[index] != new.links[index] {
            if let link = new.links[index] { links.append(LinkReport(link)) } else { removedLinks.append(Int(index)) }
        }
        var devices: [DeviceReport] = []
        var removedDevices: [String] = []
        for path in devicePaths where old.devices[path] != new.devices[path] {
            if let device = new.devices[path] {
                devices.append(DeviceReport(device))
            } else {
                removedDevices.append(path)
            }
        }
        let reuse = follows && missing != nil && Self.keepsMissing(from: old, to: new)
        self.init(
            sequence: new.changeSequence,
            phase: new.phase.rawValue,
            onlineState: new.onlineState.rawValue,
            links: links,
            removedLinks: removedLinks,
            devices: devices.sorted { $0.precedes($1) },
            removedDevices: removedDevices.sorted(),
            deviceCounts: new.deviceCounts,
            resyncs: new.counters.resyncs,
            staleHookRunsDropped: new.counters.staleHookRunsDropped,
            onlineMissing: reuse ? missing ?? nil : new.onlineMissing
        )
    }

    /// `true` when ``Model/onlineMissing`` of `new` is that of `old` with no need to look: the online state and
    /// the configuration are the same, and with required interfaces (the listing that names links) no link the
    /// change touched matches one of them, before or after. Without required interfaces and above
    /// ``NetdevWire/linksNamedPerLine`` links, the line only counts the candidate links: the same count, the same line
    /// (making it again cost 8,500 instructions, most of building a monitor's change).
    static func keepsMissing(from old: Model, to new: Model) -> Bool {
        guard old.onlineState == new.onlineState, old.configuration == new.configuration else { return false }
        let required = new.configuration.requiredInterfaces
        if required.isEmpty {
            let listed = linksNamedPerLine
            return old.links.count > listed && new.links.count > listed && old.onlineCandidates > 0
                && old.onlineCandidates == new.onlineCandidates
        }
        return !new.lastChange.links.contains { index in
            [old.links[index], new.links[index]].contains { link in
                link.map { link in required.contains { Glob.matches($0.pattern, link.name) } } ?? false
            }
        }
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

extension ControlService {
    /// `value` as JSON bytes, for the replies ``ReportJSON`` does not write (small ones). `nil` does not happen for
    /// netdevd's reports (strings, integers, booleans and collections of them; the encoder fails only on non-finite
    /// floats and throwing custom encodings); callers answer an empty object rather than stop.
    static func encoded(_ value: some Encodable) -> [UInt8]? {
        try? JSONTextEncoder().encode(value)
    }
}
