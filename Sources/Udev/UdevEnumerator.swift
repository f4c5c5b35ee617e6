internal import CUdev
import Dispatch
import Locking
public import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// Lists the devices present now, as ``UdevDevice`` values (`udevadm trigger --dry-run`, in code).
public struct UdevEnumerator: Sendable {
    /// A new enumerator.
    public init() {}

    /// The devices of `subsystems` (all devices when empty). A device that disappears while it is being read is
    /// skipped.
    ///
    /// With subsystems, the devices are found as udev's enumerator finds them (the entries of `/sys/class/NAME`
    /// and `/sys/bus/NAME/devices`, links into `/sys/devices`) but without its path walk per device, which opens
    /// every component of every path (about 30 opens per device; 70 ms for 1,000 devices); network devices are read
    /// by ``NetDeviceReader``, the others by libudev. Below 4,000 devices they are read by the calling thread
    /// (netdevd dumps rtnetlink on another at the same time; at 1,000 links a second reader met the others on the
    /// heap's lock, netdevd keeping one malloc arena, and the start took 90-100 ms rather than 50-55). From 4,000,
    /// two threads read half each: at 20,000 links, READY=1 came 0.58-0.65 s after the start rather than 0.79-0.86.
    public func devices(subsystems: [String] = []) throws(SystemCallError) -> [UdevDevice] {
        try devices(subsystems: subsystems, twoReadersFrom: 4_000)
    }

    /// ``devices(subsystems:)``, read by two threads from `twoReadersFrom` devices on.
    func devices(subsystems: [String], twoReadersFrom: Int) throws(SystemCallError) -> [UdevDevice] {
        guard !subsystems.isEmpty else { return try enumeratedByLibudev() }
        let paths = Self.syspaths(subsystems: subsystems)
        guard paths.count >= twoReadersFrom else { return try Self.read(paths[...]) }
        let halves = [paths[..<(paths.count / 2)], paths[(paths.count / 2)...]]
        let read = Locked(Array(repeating: Result<[UdevDevice], SystemCallError>.success([]), count: halves.count))
        DispatchQueue.concurrentPerform(iterations: halves.count) { half in
            let result = Result { () throws(SystemCallError) in try Self.read(halves[half]) }
            read.withLock { $0[half] = result }
        }
        var devices: [UdevDevice] = []
        devices.reserveCapacity(paths.count)
        for result in read.withLock({ $0 }) { devices += try result.get() }
        return devices
    }

    /// The devices at `paths`: network devices by ``NetDeviceReader``, every other (and any it cannot read) with a
    /// libudev context made for them.
    private static func read(_ paths: ArraySlice<String>) throws(SystemCallError) -> [UdevDevice] {
        let reader = NetDeviceReader()
        var context: OpaquePointer?
        defer { if let context { udev_unref(context) } }
        var devices: [UdevDevice] = []
        devices.reserveCapacity(paths.count)
        for path in paths {
            if let device = reader.device(at: path) {
                devices.append(device)
                continue
            }
            if context == nil {
                context = udev_new()
                guard context != nil else { throw SystemCallError("udev", operation: "udev_new", errno: errno) }
            }
            if let device = udev_device_new_from_syspath(context, path) {
                devices.append(UdevDevice(copying: device))
                udev_device_unref(device)
            }
        }
        return devices
    }

    /// The sysfs paths of the devices of `subsystems`, sorted: every entry of `/sys/class/NAME` and
    /// `/sys/bus/NAME/devices` resolved to the `/sys/devices` path it links to. Entries that are not devices
    /// (`/sys/class/net/bonding_masters`) are among them; libudev refuses those when they are read.
    static func syspaths(subsystems: [String], sysfs: String = "/sys") -> [String] {
        var paths: Set<String> = []
        for subsystem in Set(subsystems) where !subsystem.contains("/") && subsystem != "." && subsystem != ".." {
            for directory in [sysfs + "/class/" + subsystem, sysfs + "/bus/" + subsystem + "/devices"] {
                guard let stream = opendir(directory) else { continue }
                defer { closedir(stream) }
                // The directory as a path without `.` and `..`: each link is resolved against it.
                let base = normalized(Array(directory.utf8)[...], after: [])
                while let entry = readdir(stream) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    guard !name.hasPrefix(".") else { continue }
                    paths.insert(resolve(directory + "/" + name, against: base))
                }
            }
        }
        return paths.sorted()
    }

    /// `path` with its last component's symlink followed (sysfs links are relative: `../../devices/...`);
    /// `directory` is the directory `path` is in, without `.` and `..`. At 20,000 links this runs for every one as
    /// netdevd starts, so it works on the bytes: no buffer is zeroed, no path taken apart into strings.
    private static func resolve(_ path: String, against directory: [UInt8]) -> String {
        let resolved = withSymbolicLinkTarget(path) { target in
            normalized(target, after: target.first == UInt8(ascii: "/") ? [] : directory)
        }
        guard let resolved else { return path }
        return String(decoding: resolved.isEmpty ? [UInt8(ascii: "/")] : resolved, as: UTF8.self)
    }

    /// The components of `path` appended to `base` (a path without a trailing slash, or empty for the root), with
    /// `.` dropped and `..` taking the component before it away.
    private static func normalized(_ path: some Collection<UInt8>, after base: [UInt8]) -> [UInt8] {
        var result = base
        for component in path.split(separator: UInt8(ascii: "/")) {
            if component.elementsEqual(CollectionOfOne(UInt8(ascii: "."))) { continue }
            if component.elementsEqual("..".utf8) {
                result.removeSubrange((result.lastIndex(of: UInt8(ascii: "/")) ?? 0)...)
                continue
            }
            result.append(UInt8(ascii: "/"))
            result.append(contentsOf: component)
        }
        return result
    }

    /// The devices of `subsystems` (every device when empty), through libudev's enumerator.
    func enumeratedByLibudev(subsystems: [String] = []) throws(SystemCallError) -> [UdevDevice] {
        guard let context = udev_new() else { throw SystemCallError("udev", operation: "udev_new", errno: errno) }
        defer { udev_unref(context) }
        guard let enumerate = udev_enumerate_new(context) else {
            throw SystemCallError("udev", operation: "udev_enumerate_new", errno: errno)
        }
        defer { udev_enumerate_unref(enumerate) }
        for subsystem in subsystems {
            let result = udev_enumerate_add_match_subsystem(enumerate, subsystem)
            guard result >= 0 else {
                throw SystemCallError(
                    "udev", operation: "udev_enumerate_add_match_subsystem(\(subsystem))", errno: -result)
            }
        }
        let scanned = udev_enumerate_scan_devices(enumerate)
        guard scanned >= 0 else {
            throw SystemCallError("udev", operation: "udev_enumerate_scan_devices", errno: -scanned)
        }
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
    ///
    /// A device received from a monitor carries everything in its message: its driver is the message's `DRIVER`
    /// property (the kernel sends one for every device bound to a driver). Asking libudev instead would read the
    /// `driver` symlink in sysfs for every event of an unbound device (a path walk per uevent, a twentieth of
    /// netdevd's CPU in a burst), and for a device already gone would not even answer what the event said.
    init(copying device: OpaquePointer, received: Bool = false) {
        func text(_ pointer: UnsafePointer<CChar>?) -> String? {
            pointer.map { String(cString: $0) }
        }
        func bytes(_ pointer: UnsafePointer<CChar>?) -> UnsafeBufferPointer<UInt8> {
            guard let pointer else { return UnsafeBufferPointer(start: nil, count: 0) }
            return UnsafeBufferPointer(
                start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
        }
        // The list's strings, read in place (they live as long as `device`): no String per key and value.
        var pairs: [(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)] = []
        var entry = udev_device_get_properties_list_entry(device)
        while let current = entry {
            if let name = udev_list_entry_get_name(current) {
                pairs.append((bytes(name), bytes(udev_list_entry_get_value(current))))
            }
            entry = udev_list_entry_get_next(current)
        }
        let properties = DeviceProperties(pairs: pairs)
        let sequenceNumber = udev_device_get_seqnum(device)
        self.init(
            syspath: text(udev_device_get_syspath(device)) ?? "",
            sysname: text(udev_device_get_sysname(device)) ?? "",
            subsystem: text(udev_device_get_subsystem(device)),
            devtype: text(udev_device_get_devtype(device)),
            devnode: text(udev_device_get_devnode(device)),
            driver: received ? properties["DRIVER"] : text(udev_device_get_driver(device)),
            action: text(udev_device_get_action(device)),
            sequenceNumber: sequenceNumber == 0 ? nil : UInt64(sequenceNumber),
            properties: properties
        )
    }
}

/// `body` given the target of the symbolic link at `path` (relative to `directory`, a descriptor, or to the working
/// directory), read into a buffer on the stack and not copied; `nil` when `path` is no symbolic link or cannot be read.
/// A target of a kibibyte or more (sysfs's are a few dozen bytes) is read again into one of `PATH_MAX` bytes, on the
/// heap: Swift places a temporary allocation over a kibibyte there on Linux, and this runs for every link at a start.
func withSymbolicLinkTarget<Result>(
    _ path: String, in directory: Int32 = AT_FDCWD, _ body: (UnsafeBufferPointer<UInt8>) -> Result
) -> Result? {
    // `nil` when the target filled `buffer` (it may be longer); `.some(nil)` when there is no target to read.
    func target(in buffer: UnsafeMutableBufferPointer<UInt8>) -> Result?? {
        guard let start = buffer.baseAddress else { return .some(nil) }
        let count = start.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
            readlinkat(directory, path, $0, buffer.count)
        }
        guard count < buffer.count else { return nil }
        return .some(count > 0 ? body(UnsafeBufferPointer(rebasing: buffer[..<count])) : nil)
    }
    if let short = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1_024, target) { return short }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(PATH_MAX), target) ?? nil
}
