internal import CUdev

#if canImport(Glibc)
import Glibc
#endif

/// Lists the devices present now, as ``UdevDevice`` values (`udevadm trigger --dry-run`, in code).
public struct UdevEnumerator: Sendable {
    /// A new enumerator.
    public init() {}

    /// The devices of `subsystems` (all devices when empty), in sysfs order. A device that disappears while it is
    /// being read is skipped.
    public func devices(subsystems: [String] = []) throws(UdevError) -> [UdevDevice] {
        guard let context = udev_new() else { throw UdevError(operation: "udev_new", errno: errno) }
        defer { udev_unref(context) }
        guard let enumerate = udev_enumerate_new(context) else {
            throw UdevError(operation: "udev_enumerate_new", errno: errno)
        }
        defer { udev_enumerate_unref(enumerate) }
        for subsystem in subsystems {
            let result = udev_enumerate_add_match_subsystem(enumerate, subsystem)
            guard result >= 0 else {
                throw UdevError(operation: "udev_enumerate_add_match_subsystem(\(subsystem))", errno: -result)
            }
        }
        let scanned = udev_enumerate_scan_devices(enumerate)
        guard scanned >= 0 else { throw UdevError(operation: "udev_enumerate_scan_devices", errno: -scanned) }
        var devices: [UdevDevice] = []
        var entry = udev_enumerate_get_list_entry(enumerate)
        while let current = entry {
            if let path = udev_list_entry_get_name(current),
                let device = udev_device_new_from_syspath(context, path)
            {
                devices.append(UdevDevice(copying: device))
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return devices
    }
}

extension UdevDevice {
    /// Copies everything out of a libudev device; the pointer is not kept.
    init(copying device: OpaquePointer) {
        func text(_ pointer: UnsafePointer<CChar>?) -> String? {
            pointer.map { String(cString: $0) }
        }
        var properties: [String: String] = [:]
        var entry = udev_device_get_properties_list_entry(device)
        while let current = entry {
            if let name = text(udev_list_entry_get_name(current)) {
                properties[name] = text(udev_list_entry_get_value(current)) ?? ""
            }
            entry = udev_list_entry_get_next(current)
        }
        let sequenceNumber = udev_device_get_seqnum(device)
        self.init(
            syspath: text(udev_device_get_syspath(device)) ?? "",
            sysname: text(udev_device_get_sysname(device)) ?? "",
            subsystem: text(udev_device_get_subsystem(device)),
            devtype: text(udev_device_get_devtype(device)),
            devnode: text(udev_device_get_devnode(device)),
            driver: text(udev_device_get_driver(device)),
            action: text(udev_device_get_action(device)),
            sequenceNumber: sequenceNumber == 0 ? nil : UInt64(sequenceNumber),
            properties: properties
        )
    }
}
