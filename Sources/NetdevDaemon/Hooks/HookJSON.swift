import JSONCoding
public import NetdevSession
import NetdevWire

/// `NETDEVD_JSON`, the subject of a hook run as one JSON object: for a link its state, addresses, default routes
/// and operational state; for a device its udev identity and properties.
///
/// Written directly into bytes with ``JSONCoding/JSONOutput`` (a burst runs thousands of hooks, and an encoder per
/// run cost more than the spawn), with the text `JSONEncoder` gives with `.sortedKeys` and
/// `.withoutEscapingSlashes`: keys in the order of their UTF-8 bytes (the members below are written in that order),
/// absent values left out. A test holds the two to the same bytes.
public enum HookJSON {
    /// The object for `link`.
    public static func describe(_ link: Link) -> String {
        var json = JSONOutput(capacity: 512)
        json.open("{")
        json.add("addresses", array: link.addresses) { $0.element($1.cidr) }
        json.add("defaultRoutes", array: link.defaultRoutes) { json, route in
            json.open("{")
            json.add("family", string: route.family.rawValue)
            json.add("gateway", string: route.gateway)
            json.add("metric", number: route.metric)
            json.close("}")
        }
        json.add("index", number: Int(link.index))
        json.add("kind", string: link.state.kind)
        json.add("macAddress", string: link.state.macAddress)
        json.add("mtu", number: link.state.mtu)
        json.add("name", string: link.name)
        json.add("operationalState", string: link.operationalState.rawValue)
        json.close("}")
        return String(decoding: json.bytes, as: UTF8.self)
    }

    /// The object for `device`: the same members as the device in a report (``ReportJSON``).
    public static func describe(_ device: Device) -> String {
        var json = JSONOutput(capacity: 512)
        ReportJSON.append(&json, DeviceReport(device))
        return String(decoding: json.bytes, as: UTF8.self)
    }
}
