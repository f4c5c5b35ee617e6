import JSONCoding
public import NetdevSession

/// `NETDEVD_JSON`, the subject of a hook run as one JSON object: for a link its state, addresses, default routes
/// and operational state; for a device its udev identity and properties.
///
/// Written directly into bytes (a burst runs thousands of hooks, and an encoder per run cost more than the spawn),
/// with the text `JSONEncoder` gives with `.sortedKeys` and `.withoutEscapingSlashes`: keys in the order of their
/// UTF-8 bytes (the members below are written in that order; a device's properties are sorted), absent values
/// left out, strings as ``JSONString`` writes them. A test holds the two to the same bytes.
public enum HookJSON {
    /// The object for `link`.
    public static func describe(_ link: Link) -> String {
        var json = JSONWriting()
        json.open("{")
        json.key("addresses")
        json.open("[")
        for address in link.addresses { json.element(address.cidr) }
        json.close("]")
        json.key("defaultRoutes")
        json.open("[")
        for route in link.defaultRoutes {
            json.open("{")
            json.add("family", string: route.family.rawValue)
            json.add("gateway", string: route.gateway)
            json.add("metric", number: route.metric)
            json.close("}")
        }
        json.close("]")
        json.add("index", number: Int(link.index))
        json.add("kind", string: link.state.kind)
        json.add("macAddress", string: link.state.macAddress)
        json.add("mtu", number: link.state.mtu)
        json.add("name", string: link.name)
        json.add("operationalState", string: link.operationalState.rawValue)
        json.close("}")
        return String(decoding: json.output, as: UTF8.self)
    }

    /// The object for `device`.
    public static func describe(_ device: Device) -> String {
        var json = JSONWriting()
        json.open("{")
        json.add("devnode", string: device.devnode)
        json.add("devtype", string: device.devtype)
        json.add("driver", string: device.driver)
        json.key("properties")
        json.open("{")
        for (name, value) in device.properties.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            json.add(name, string: value)
        }
        json.close("}")
        json.add("subsystem", string: device.subsystem)
        json.add("sysname", string: device.sysname)
        json.add("syspath", string: device.syspath)
        json.close("}")
        return String(decoding: json.output, as: UTF8.self)
    }
}

/// JSON text written value by value into one buffer; the caller opens and closes containers and gives an
/// object's members in key order.
private struct JSONWriting {
    var output: [UInt8] = []
    /// A value was written at this level: the next one needs a comma.
    private var followsValue = false

    init() {
        output.reserveCapacity(512)
    }

    /// Opens an object (`{`) or array (`[`), as a member's value or an array's element.
    mutating func open(_ bracket: Unicode.Scalar) {
        if followsValue { output.append(UInt8(ascii: ",")) }
        output.append(UInt8(ascii: bracket))
        followsValue = false
    }

    /// Closes what ``open(_:)`` opened.
    mutating func close(_ bracket: Unicode.Scalar) {
        output.append(UInt8(ascii: bracket))
        followsValue = true
    }

    /// Starts the member `name`: its value is written next.
    mutating func key(_ name: String) {
        if followsValue { output.append(UInt8(ascii: ",")) }
        JSONString.append(name, to: &output)
        output.append(UInt8(ascii: ":"))
        followsValue = false
    }

    /// A string element of an array.
    mutating func element(_ string: String) {
        if followsValue { output.append(UInt8(ascii: ",")) }
        JSONString.append(string, to: &output)
        followsValue = true
    }

    /// The member `name` with a string value; nothing when it is `nil`.
    mutating func add(_ name: String, string: String?) {
        guard let string else { return }
        key(name)
        JSONString.append(string, to: &output)
        followsValue = true
    }

    /// The member `name` with a number value; nothing when it is `nil`.
    mutating func add(_ name: String, number: Int?) {
        guard let number else { return }
        key(name)
        output.append(contentsOf: String(number).utf8)
        followsValue = true
    }
}
