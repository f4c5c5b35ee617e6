public import SystemSupport

/// A device as the session tracks it (from udev): a plain value keyed by its sysfs path.
///
/// Its parts are in one shared, immutable box, as ``Link``'s are: the model's tables copy devices by the dozen on
/// every change, and a box is one reference to count instead of seven. Setting a part makes a new box.
public struct Device: Codable, Sendable, Equatable {
    private struct Fields: Equatable {
        var syspath: String
        var sysname: String
        var subsystem: String
        var devtype: String?
        var devnode: String?
        var driver: String?
        var properties: DeviceProperties
    }

    private final class Parts: Sendable {
        let fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private var parts: Parts

    /// The sysfs path, the device's identity.
    public var syspath: String {
        get { parts.fields.syspath }
        set { change { $0.syspath = newValue } }
    }
    /// The kernel name (`sda`, `ttyUSB0`).
    public var sysname: String {
        get { parts.fields.sysname }
        set { change { $0.sysname = newValue } }
    }
    /// The subsystem (`net`, `block`, `usb`, `tty`).
    public var subsystem: String {
        get { parts.fields.subsystem }
        set { change { $0.subsystem = newValue } }
    }
    /// The device type within the subsystem.
    public var devtype: String? {
        get { parts.fields.devtype }
        set { change { $0.devtype = newValue } }
    }
    /// The device node.
    public var devnode: String? {
        get { parts.fields.devnode }
        set { change { $0.devnode = newValue } }
    }
    /// The bound driver.
    public var driver: String? {
        get { parts.fields.driver }
        set { change { $0.driver = newValue } }
    }
    /// udev's properties.
    public var properties: DeviceProperties {
        get { parts.fields.properties }
        set { change { $0.properties = newValue } }
    }

    /// A device value.
    public init(
        syspath: String,
        sysname: String,
        subsystem: String,
        devtype: String? = nil,
        devnode: String? = nil,
        driver: String? = nil,
        properties: DeviceProperties = [:]
    ) {
        parts = Parts(
            Fields(
                syspath: syspath, sysname: sysname, subsystem: subsystem, devtype: devtype, devnode: devnode,
                driver: driver, properties: properties))
    }

    /// A new box with `body`'s change: the old one may be shared.
    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = parts.fields
        body(&fields)
        parts = Parts(fields)
    }

    /// The same parts (the same box, or equal parts in two).
    public static func == (lhs: Device, rhs: Device) -> Bool {
        lhs.parts === rhs.parts || lhs.parts.fields == rhs.parts.fields
    }

    private enum CodingKeys: String, CodingKey {
        case syspath, sysname, subsystem, devtype, devnode, driver, properties
    }

    /// Decodes a device; absent optional parts are `nil`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            syspath: try container.decode(String.self, forKey: .syspath),
            sysname: try container.decode(String.self, forKey: .sysname),
            subsystem: try container.decode(String.self, forKey: .subsystem),
            devtype: try container.decodeIfPresent(String.self, forKey: .devtype),
            devnode: try container.decodeIfPresent(String.self, forKey: .devnode),
            driver: try container.decodeIfPresent(String.self, forKey: .driver),
            properties: try container.decode(DeviceProperties.self, forKey: .properties))
    }

    /// Encodes a device with its parts' names; `nil` parts are left out, as the synthesized encoding did.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(syspath, forKey: .syspath)
        try container.encode(sysname, forKey: .sysname)
        try container.encode(subsystem, forKey: .subsystem)
        try container.encodeIfPresent(devtype, forKey: .devtype)
        try container.encodeIfPresent(devnode, forKey: .devnode)
        try container.encodeIfPresent(driver, forKey: .driver)
        try container.encode(properties, forKey: .properties)
    }
}

/// A device reflects (and dumps) as its parts, not as its box, as ``Link`` does.
extension Device: CustomReflectable {
    /// The parts, by name.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "syspath": syspath, "sysname": sysname, "subsystem": subsystem, "devtype": devtype as Any,
                "devnode": devnode as Any, "driver": driver as Any, "properties": properties,
            ])
    }
}
