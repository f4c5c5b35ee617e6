/// A device as the session tracks it (from udev): a plain value keyed by its sysfs path.
public struct Device: Codable, Sendable, Equatable {
    /// The sysfs path, the device's identity.
    public var syspath: String
    /// The kernel name (`sda`, `ttyUSB0`).
    public var sysname: String
    /// The subsystem (`net`, `block`, `usb`, `tty`).
    public var subsystem: String
    /// The device type within the subsystem.
    public var devtype: String?
    /// The device node.
    public var devnode: String?
    /// The bound driver.
    public var driver: String?
    /// udev's properties.
    public var properties: [String: String]

    /// A device value.
    public init(
        syspath: String,
        sysname: String,
        subsystem: String,
        devtype: String? = nil,
        devnode: String? = nil,
        driver: String? = nil,
        properties: [String: String] = [:]
    ) {
        self.syspath = syspath
        self.sysname = sysname
        self.subsystem = subsystem
        self.devtype = devtype
        self.devnode = devnode
        self.driver = driver
        self.properties = properties
    }
}
