public import SystemSupport

/// A device as udev describes it: a plain value, copied out of libudev at the adapter's boundary.
public struct UdevDevice: Sendable, Equatable, Codable {
    /// The device's path in sysfs (`/sys/devices/...`), its identity.
    public var syspath: String
    /// The kernel name (`eth0`, `sda`, `ttyUSB0`).
    public var sysname: String
    /// The subsystem (`net`, `block`, `usb`, `tty`).
    public var subsystem: String?
    /// The device type within the subsystem (`disk`, `partition`, `usb_device`).
    public var devtype: String?
    /// The device node (`/dev/sda`), if any.
    public var devnode: String?
    /// The driver bound to the device, if any.
    public var driver: String?
    /// For a device received from a monitor: `add`, `remove`, `change`, `move`, `bind`, `unbind`; `nil` when the
    /// value comes from an enumeration.
    public var action: String?
    /// For a device received from a monitor: the kernel's event sequence number.
    public var sequenceNumber: UInt64?
    /// The udev properties (`ID_NET_NAME_PATH`, `INTERFACE`, `IFINDEX`, ...).
    public var properties: DeviceProperties

    /// A device value; the fields mean what udev's do.
    public init(
        syspath: String,
        sysname: String,
        subsystem: String? = nil,
        devtype: String? = nil,
        devnode: String? = nil,
        driver: String? = nil,
        action: String? = nil,
        sequenceNumber: UInt64? = nil,
        properties: DeviceProperties = [:]
    ) {
        self.syspath = syspath
        self.sysname = sysname
        self.subsystem = subsystem
        self.devtype = devtype
        self.devnode = devnode
        self.driver = driver
        self.action = action
        self.sequenceNumber = sequenceNumber
        self.properties = properties
    }

    /// For network devices, the interface index (the `IFINDEX` property).
    public var interfaceIndex: Int32? {
        properties["IFINDEX"].flatMap { Int32($0) }
    }
}
