public import NetdevSession

/// `NETDEVD_JSON`, the subject of a hook run as one JSON object: for a link its state, addresses, default routes
/// and operational state; for a device its udev identity and properties.
///
/// Written directly (a burst runs thousands of hooks, and a `JSONEncoder` per run cost more than the spawn), with
/// the text `JSONEncoder` gives with `.sortedKeys` and `.withoutEscapingSlashes`: keys in the order of their UTF-8
/// bytes, absent values left out, `"`, `\` and control characters escaped, everything else as it is. A test holds
/// the two to the same bytes.
public enum HookJSON {
    /// The object for `link`.
    public static func describe(_ link: Link) -> String {
        var object = JSONObject()
        object.add("addresses", array: link.addresses.map { JSONObject.quoted($0.cidr) })
        object.add(
            "defaultRoutes",
            array: link.defaultRoutes.map { route in
                var object = JSONObject()
                object.add("family", string: route.family.rawValue)
                object.add("gateway", string: route.gateway)
                object.add("metric", number: route.metric)
                return object.text
            })
        object.add("index", number: Int(link.index))
        object.add("kind", string: link.state.kind)
        object.add("macAddress", string: link.state.macAddress)
        object.add("mtu", number: link.state.mtu)
        object.add("name", string: link.name)
        object.add("operationalState", string: link.operationalState.rawValue)
        return object.text
    }

    /// The object for `device`.
    public static func describe(_ device: Device) -> String {
        var properties = JSONObject()
        for (name, value) in device.properties {
            properties.add(name, string: value)
        }
        var object = JSONObject()
        object.add("devnode", string: device.devnode)
        object.add("devtype", string: device.devtype)
        object.add("driver", string: device.driver)
        object.add("properties", object: properties)
        object.add("subsystem", string: device.subsystem)
        object.add("syspath", string: device.syspath)
        object.add("sysname", string: device.sysname)
        return object.text
    }
}

/// A JSON object under construction: members are kept with their encoded values and sorted by key when the text
/// is taken.
private struct JSONObject {
    private var members: [(key: String, value: String)] = []

    mutating func add(_ key: String, string: String?) {
        if let string { members.append((key, Self.quoted(string))) }
    }

    mutating func add(_ key: String, number: Int?) {
        if let number { members.append((key, String(number))) }
    }

    mutating func add(_ key: String, array elements: [String]) {
        members.append((key, "[" + elements.joined(separator: ",") + "]"))
    }

    mutating func add(_ key: String, object: JSONObject) {
        members.append((key, object.text))
    }

    var text: String {
        let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        var text = "{"
        for (position, member) in sorted.enumerated() {
            if position > 0 { text += "," }
            text += Self.quoted(member.key)
            text += ":"
            text += member.value
        }
        return text + "}"
    }

    /// `string` as a JSON string literal.
    static func quoted(_ string: String) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        bytes.reserveCapacity(string.utf8.count + 2)
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x08: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        return String(decoding: bytes, as: UTF8.self)
    }
}
