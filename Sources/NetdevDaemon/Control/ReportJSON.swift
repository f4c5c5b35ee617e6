import JSONCoding
public import NetdevWire

/// The JSON text of the reports (a monitor's change, a link in `ListLinks`, the state, the devices), written field
/// by field instead of through `Codable`. Contract: the bytes are exactly ``JSONCoding/JSONTextEncoder``'s for the same
/// value (compact, members in their keys' UTF-8 order, an absent optional left out), so a client cannot tell which
/// wrote them; the tests compare the two on random reports. The generic encoder cost about 104,000 instructions per
/// monitor change, most of netdevd's work per event with monitors attached, and built a tree of the whole value
/// first: for `Monitor`'s first reply at 20,000 links (every link and device), tens of megabytes held at once.
public enum ReportJSON {
    /// `{"change": change}`, the parameters of a monitor's reply after its first state.
    public static func changeParameters(_ change: ChangeReport) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256 + 160 * change.links.count + 400 * change.devices.count)
        output.append(contentsOf: #"{"change":"#.utf8)
        append(change, to: &output)
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// `{"state": state}`: `GetState`'s reply, and `Monitor`'s first with every device.
    public static func stateParameters(_ state: StateReport) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256 + 160 * state.links.count + 400 * (state.devices?.count ?? 0))
        output.append(contentsOf: #"{"state":"#.utf8)
        var object = Members()
        object.key("deviceCounts", &output)
        appendCounts(state.deviceCounts, to: &output)
        if let devices = state.devices {
            object.key("devices", &output)
            appendArray(devices, to: &output, append)
        }
        object.key("links", &output)
        appendArray(state.links, to: &output, append)
        appendSmallParts(
            missing: state.onlineMissing, online: state.onlineState, phase: state.phase, to: &output, &object)
        appendCounters(
            resyncs: state.resyncs, sequence: state.sequence, dropped: state.staleHookRunsDropped, to: &output, &object)
        output.append(contentsOf: "}}".utf8)
        return output
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
        _ name: String, _ elements: [Element], bytesEach: Int, _ appendElement: (Element, inout [UInt8]) -> Void
    ) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(16 + bytesEach * elements.count)
        var object = Members()
        object.key(name, &output)
        appendArray(elements, to: &output, appendElement)
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// `{"text": text}`: `GetMetrics`' reply, in one buffer sized for the text and its escapes (a metrics text has
    /// about one escape in 20 bytes: the quotes of its labels and its line feeds).
    public static func textParameters(_ text: String) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(16 + text.utf8.count + text.utf8.count / 8)
        output.append(contentsOf: #"{"text":"#.utf8)
        JSONString.append(text, to: &output)
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// Appends `change` as a JSON object.
    public static func append(_ change: ChangeReport, to output: inout [UInt8]) {
        var object = Members()
        object.key("deviceCounts", &output)
        appendCounts(change.deviceCounts, to: &output)
        object.key("devices", &output)
        appendArray(change.devices, to: &output, append)
        object.key("links", &output)
        appendArray(change.links, to: &output, append)
        appendSmallParts(
            missing: change.onlineMissing, online: change.onlineState, phase: change.phase, to: &output, &object)
        object.key("removedDevices", &output)
        appendArray(change.removedDevices, to: &output, JSONString.append)
        object.key("removedLinks", &output)
        appendArray(change.removedLinks, to: &output, appendInteger)
        appendCounters(
            resyncs: change.resyncs, sequence: change.sequence, dropped: change.staleHookRunsDropped, to: &output,
            &object)
        output.append(UInt8(ascii: "}"))
    }

    /// Appends `link` as a JSON object.
    public static func append(_ link: LinkReport, to output: inout [UInt8]) {
        var object = Members()
        object.key("addresses", &output)
        appendArray(link.addresses, to: &output, JSONString.append)
        object.key("gateways", &output)
        appendArray(link.gateways, to: &output, JSONString.append)
        object.key("index", &output)
        appendInteger(link.index, to: &output)
        object.string("macAddress", link.macAddress, &output)
        if let mtu = link.mtu {
            object.key("mtu", &output)
            appendInteger(mtu, to: &output)
        }
        object.string("name", link.name, &output)
        object.string("operationalState", link.operationalState, &output)
        object.string("type", link.type, &output)
        output.append(UInt8(ascii: "}"))
    }

    /// Appends `device` as a JSON object.
    public static func append(_ device: DeviceReport, to output: inout [UInt8]) {
        var object = Members()
        object.string("devnode", device.devnode, &output)
        object.string("devtype", device.devtype, &output)
        object.string("driver", device.driver, &output)
        object.key("properties", &output)
        var properties = Members()
        for key in device.properties.keys.sorted(by: utf8Precedes) {
            properties.key(key, &output)
            JSONString.append(device.properties[key] ?? "", to: &output)
        }
        properties.close(&output)
        object.string("subsystem", device.subsystem, &output)
        object.string("sysname", device.sysname, &output)
        object.string("syspath", device.syspath, &output)
        output.append(UInt8(ascii: "}"))
    }

    /// The members of one object being written: the brace or comma before each key.
    private struct Members {
        private var opened = false

        /// Writes the member `name` with the string `value`, or nothing when `value` is `nil` (as the encoder leaves
        /// out an absent optional).
        mutating func string(_ name: String, _ value: String?, _ output: inout [UInt8]) {
            guard let value else { return }
            key(name, &output)
            JSONString.append(value, to: &output)
        }

        /// Writes `{` or `,`, then `name` as a JSON string, then `:`.
        mutating func key(_ name: String, _ output: inout [UInt8]) {
            output.append(UInt8(ascii: opened ? "," : "{"))
            opened = true
            JSONString.append(name, to: &output)
            output.append(UInt8(ascii: ":"))
        }

        /// Writes `}`, after `{` if no member was written.
        func close(_ output: inout [UInt8]) {
            if !opened { output.append(UInt8(ascii: "{")) }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The members between `links` and `removedDevices` (or `resyncs`), which a state and a change share.
    private static func appendSmallParts(
        missing: [String]?, online: String, phase: String, to output: inout [UInt8], _ object: inout Members
    ) {
        if let missing {
            object.key("onlineMissing", &output)
            appendArray(missing, to: &output, JSONString.append)
        }
        object.string("onlineState", online, &output)
        object.string("phase", phase, &output)
    }

    /// The last three members, which a state and a change share.
    private static func appendCounters(
        resyncs: Int, sequence: Int, dropped: Int, to output: inout [UInt8], _ object: inout Members
    ) {
        object.key("resyncs", &output)
        appendInteger(resyncs, to: &output)
        object.key("sequence", &output)
        appendInteger(sequence, to: &output)
        object.key("staleHookRunsDropped", &output)
        appendInteger(dropped, to: &output)
    }

    private static func appendCounts(_ counts: [String: Int], to output: inout [UInt8]) {
        var object = Members()
        for key in counts.keys.sorted(by: utf8Precedes) {
            object.key(key, &output)
            appendInteger(counts[key] ?? 0, to: &output)
        }
        object.close(&output)
    }

    private static func appendArray<Element>(
        _ elements: [Element], to output: inout [UInt8], _ appendElement: (Element, inout [UInt8]) -> Void
    ) {
        output.append(UInt8(ascii: "["))
        for (position, element) in elements.enumerated() {
            if position > 0 { output.append(UInt8(ascii: ",")) }
            appendElement(element, &output)
        }
        output.append(UInt8(ascii: "]"))
    }

    /// Appends `value` in decimal, as `String(value)` spells it.
    static func appendInteger(_ value: Int, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for UInt64.max's 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            output.append(contentsOf: buffer[start...])
        }
    }

    /// Whether `a` precedes `b` by their UTF-8 bytes: the order the encoder writes an object's keys in.
    private static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        var (a, b) = (a, b)
        return a.withUTF8 { left in b.withUTF8 { right in left.lexicographicallyPrecedes(right) } }
    }
}
