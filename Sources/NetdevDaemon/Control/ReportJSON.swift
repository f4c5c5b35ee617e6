public import JSONCoding
public import NetdevWire

/// The JSON text of the reports (a monitor's change, a link in `ListLinks`, the state, the devices), written field
/// by field with ``JSONCoding/JSONOutput`` instead of through `Codable`. Contract: the bytes are exactly
/// ``JSONCoding/JSONTextEncoder``'s for the same value (compact, members in their keys' UTF-8 order, an absent
/// optional left out), so a client cannot tell which wrote them; the tests compare the two on random reports. The
/// generic encoder cost about 104,000 instructions per monitor change, most of netdevd's work per event with monitors
/// attached, and built a tree of the whole value first: for `Monitor`'s first reply at 20,000 links (every link and
/// device), tens of megabytes held at once.
public enum ReportJSON {
    /// `{"change": change}`, the parameters of a monitor's reply after its first state, appended to `buffer` (a
    /// reply's frame).
    public static func appendChangeParameters(_ change: ChangeReport, to buffer: inout [UInt8]) {
        appendChangeParameters(change, counts: nil, to: &buffer)
    }

    /// `{"state": state}`: `GetState`'s reply, and `Monitor`'s first with every device.
    public static func stateParameters(_ state: StateReport) -> [UInt8] {
        var json = JSONOutput(capacity: 256 + 160 * state.links.count + 400 * (state.devices?.count ?? 0))
        json.open("{")
        json.key("state")
        json.open("{")
        json.add("deviceCounts", object: state.deviceCounts) { $0.element($1) }
        if let devices = state.devices {
            json.add("devices", array: devices, append)
        }
        json.add("links", array: state.links, append)
        appendSmallParts(missing: state.onlineMissing, online: state.onlineState, phase: state.phase, to: &json)
        appendCounters(
            resyncs: state.resyncs, sequence: state.sequence, dropped: state.staleHookRunsDropped, to: &json)
        json.close("}")
        json.close("}")
        return json.take()
    }

    /// `{"devices": devices}`: `ListDevices`' reply.
    public static func devicesParameters(_ devices: [DeviceReport]) -> [UInt8] {
        listParameters("devices", devices, bytesEach: 400, append)
    }

    /// `{"links": links}`: `ListLinks`' reply to a pattern (the whole list is ``LinkListText``'s).
    public static func linksParameters(_ links: [LinkReport]) -> [UInt8] {
        listParameters("links", links, bytesEach: 160, append)
    }

    /// `{name: elements}`, in a buffer sized for `bytesEach` bytes an element.
    private static func listParameters<Element>(
        _ name: String, _ elements: [Element], bytesEach: Int, _ write: (inout JSONOutput, Element) -> Void
    ) -> [UInt8] {
        var json = JSONOutput(capacity: 16 + bytesEach * elements.count)
        json.open("{")
        json.add(name, array: elements, write)
        json.close("}")
        return json.take()
    }

    /// `{"change": change}`, its device counts copied from `counts` when given: the change's, as
    /// ``deviceCountsText(_:)`` wrote them (``ChangeWriter``).
    static func appendChangeParameters(_ change: ChangeReport, counts: [UInt8]?, to buffer: inout [UInt8]) {
        var json = JSONOutput(appendingTo: &buffer)
        json.open("{")
        json.key("change")
        append(&json, change, counts: counts)
        json.close("}")
        buffer = json.take()
    }

    /// The JSON object of a report's `deviceCounts`.
    static func deviceCountsText(_ counts: [String: Int]) -> [UInt8] {
        var json = JSONOutput(capacity: 2 + 16 * counts.count)
        json.object(counts) { $0.element($1) }
        return json.take()
    }

    /// Writes `change` as a JSON object.
    public static func append(_ json: inout JSONOutput, _ change: ChangeReport) {
        append(&json, change, counts: nil)
    }

    /// Writes `change` as a JSON object, its device counts copied from `counts` when given (``deviceCountsText(_:)``
    /// of them).
    private static func append(_ json: inout JSONOutput, _ change: ChangeReport, counts: [UInt8]?) {
        json.open("{")
        if let counts {
            json.key("deviceCounts")
            json.append(encoded: counts[...])
        } else {
            json.add("deviceCounts", object: change.deviceCounts) { $0.element($1) }
        }
        json.add("devices", array: change.devices, append)
        json.add("links", array: change.links, append)
        appendSmallParts(missing: change.onlineMissing, online: change.onlineState, phase: change.phase, to: &json)
        json.add("removedDevices", strings: change.removedDevices)
        json.add("removedLinks", array: change.removedLinks) { $0.element($1) }
        appendCounters(
            resyncs: change.resyncs, sequence: change.sequence, dropped: change.staleHookRunsDropped, to: &json)
        json.close("}")
    }

    /// Writes `link` as a JSON object.
    public static func append(_ json: inout JSONOutput, _ link: LinkReport) {
        json.open("{")
        json.add("addresses", strings: link.addresses)
        json.add("gateways", strings: link.gateways)
        json.add("index", number: link.index)
        json.add("macAddress", string: link.macAddress)
        json.add("mtu", number: link.mtu)
        json.add("name", string: link.name)
        json.add("operationalState", string: link.operationalState)
        json.add("type", string: link.type)
        json.close("}")
    }

    /// Writes `device` as a JSON object.
    public static func append(_ json: inout JSONOutput, _ device: DeviceReport) {
        json.open("{")
        json.add("devnode", string: device.devnode)
        json.add("devtype", string: device.devtype)
        json.add("driver", string: device.driver)
        json.key("properties")
        json.open("{")
        // Kept in key order: copied as they are.
        device.properties.forEachUTF8 { json.add(utf8: $0, string: $1) }
        json.close("}")
        json.add("subsystem", string: device.subsystem)
        json.add("sysname", string: device.sysname)
        json.add("syspath", string: device.syspath)
        json.close("}")
    }

    /// The members between `links` and `removedDevices` (or `resyncs`), which a state and a change share.
    private static func appendSmallParts(missing: [String]?, online: String, phase: String, to json: inout JSONOutput) {
        if let missing {
            json.add("onlineMissing", strings: missing)
        }
        json.add("onlineState", string: online)
        json.add("phase", string: phase)
    }

    /// The last three members, which a state and a change share.
    private static func appendCounters(resyncs: Int, sequence: Int, dropped: Int, to json: inout JSONOutput) {
        json.add("resyncs", number: resyncs)
        json.add("sequence", number: sequence)
        json.add("staleHookRunsDropped", number: dropped)
    }
}
