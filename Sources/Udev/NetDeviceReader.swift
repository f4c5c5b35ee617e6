import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// Reads a network device (an entry of `/sys/class/net`) as libudev's `udev_device_new_from_syspath` presents it,
/// with only the reads its values need: the kernel's `uevent` variables, the `subsystem` and `driver` links, and
/// udev's database entry (`/run/udev/data/n<IFINDEX>`).
///
/// libudev opens every component of a device's path to check it (about 30 system calls per device, and
/// `getrandom` for three hash tables): at 20,000 links, 1.2 s of one thread's time, and READY=1 came 1.5-1.6 s after
/// the start. Here a device is one path lookup and a few short ones relative to it: READY=1 after 0.8-0.9 s with one
/// reader, 0.6-0.7 s with the two `UdevEnumerator` runs from 4,000 devices (docs/PERFORMANCE.md).
///
/// Contract: a device it returns equals what libudev gives for the same path (a test compares the two on every link
/// of a namespace), its tags and device links sorted where libudev's order changes with each process. A path that is
/// not a network device, that is gone, or whose files are not what this expects gives `nil`, and the caller reads it
/// with libudev.
final class NetDeviceReader {
    /// A property's key and value, in a file's bytes.
    private typealias Property = (key: ArraySlice<UInt8>, value: ArraySlice<UInt8>)

    /// udev's database directory, open; -1 when it is not there (no udevd: no device has udev's properties).
    private let database: Int32
    /// The largest file read: sysfs serves at most a page, and a database entry is a few hundred bytes.
    private static let fileLimit = 8_192

    /// Where every file is read, made once per reader: ``fileLimit`` bytes is more than Swift places on the stack
    /// (a temporary allocation over a kibibyte is a `malloc` on Linux), and a start reads two files per link on two
    /// threads sharing netdevd's one malloc arena.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: NetDeviceReader.fileLimit, alignment: 1)

    /// A reader of the database in `databaseDirectory`.
    init(databaseDirectory: String = "/run/udev/data") {
        database = open(databaseDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    deinit {
        if database >= 0 { close(database) }
        buffer.deallocate()
    }

    /// The network device at `syspath` (`/sys/devices/virtual/net/eth0`), or `nil` to read it with libudev.
    func device(at syspath: String) -> UdevDevice? {
        let directory = open(syspath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return nil }
        defer { close(directory) }
        guard let subsystem = Self.link(directory, "subsystem"), subsystem.reversed().starts(with: "ten/ssalc/".utf8),
            let uevent = contents(of: directory, "uevent")
        else { return nil }
        let devpath = syspath.utf8.dropFirst(syspath.utf8.starts(with: "/sys/".utf8) ? 4 : 0)
        var properties: [Property] = [
            (Self.bytes("DEVPATH"), Array(devpath)[...]), (Self.bytes("SUBSYSTEM"), Self.bytes("net")),
        ]
        var devtype: String?
        var devnode: String?
        var interfaceIndex: ArraySlice<UInt8>?
        for (key, value) in Self.assignments(uevent, separator: UInt8(ascii: "=")) {
            if key.elementsEqual("DEVNAME".utf8) {
                // libudev's DEVNAME is the node's whole path.
                let node = value.first == UInt8(ascii: "/") ? value : Self.bytes("/dev/") + value
                devnode = String(decoding: node, as: UTF8.self)
                properties.append((key, node))
                continue
            }
            if key.elementsEqual("DEVTYPE".utf8) { devtype = String(decoding: value, as: UTF8.self) }
            if key.elementsEqual("IFINDEX".utf8) { interfaceIndex = value }
            properties.append((key, value))
        }
        guard let interfaceIndex, !interfaceIndex.isEmpty, interfaceIndex.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        guard let stored = storedProperties(interfaceIndex) else { return nil }
        properties += stored
        let sysname = syspath.utf8.split(separator: UInt8(ascii: "/")).last.map {
            String(decoding: $0.map { $0 == UInt8(ascii: "!") ? UInt8(ascii: "/") : $0 }, as: UTF8.self)
        }
        return UdevDevice(
            syspath: syspath, sysname: sysname ?? "", subsystem: "net", devtype: devtype, devnode: devnode,
            driver: Self.link(directory, "driver").flatMap { target in
                target.split(separator: UInt8(ascii: "/")).last.map { String(decoding: $0, as: UTF8.self) }
            },
            properties: DeviceProperties(byteList: properties))
    }

    /// What udev stored for the device with `interfaceIndex`: its properties (`E:`), when it was initialized (`I:`),
    /// its tags (`G:`, and `Q:` for the current ones) and device links (`S:`), as libudev turns them into
    /// properties. Empty when udev has no entry (not yet processed, or no udevd); `nil` when the entry cannot be read.
    private func storedProperties(_ interfaceIndex: ArraySlice<UInt8>) -> [Property]? {
        guard database >= 0 else { return [] }
        let name = String(decoding: Self.bytes("n") + interfaceIndex, as: UTF8.self)
        let file = openat(database, name, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return errno == ENOENT ? [] : nil }
        guard let entry = read(file) else { return nil }
        var properties: [Property] = []
        var tags: Set<ArraySlice<UInt8>> = []
        var currentTags: Set<ArraySlice<UInt8>> = []
        var links: Set<ArraySlice<UInt8>> = []
        for (kind, value) in Self.assignments(entry, separator: UInt8(ascii: ":")) where kind.count == 1 {
            switch kind.first {
            case UInt8(ascii: "E"):
                guard let equals = value.firstIndex(of: UInt8(ascii: "=")) else { continue }
                properties.append((value[..<equals], value[(equals + 1)...]))
            case UInt8(ascii: "I"): properties.append((Self.bytes("USEC_INITIALIZED"), value))
            case UInt8(ascii: "G"): tags.insert(value)
            case UInt8(ascii: "Q"):
                tags.insert(value)
                currentTags.insert(value)
            case UInt8(ascii: "S"): links.insert(Self.bytes("/dev/") + value)
            default: continue
            }
        }
        // libudev joins these in its hash tables' order, which changes with each process; sorted here.
        if !links.isEmpty {
            properties.append((Self.bytes("DEVLINKS"), Self.joined(links, separator: " ", around: "")[...]))
        }
        if !tags.isEmpty {
            properties.append((Self.bytes("TAGS"), Self.joined(tags, separator: ":", around: ":")[...]))
        }
        if !currentTags.isEmpty {
            properties.append((Self.bytes("CURRENT_TAGS"), Self.joined(currentTags, separator: ":", around: ":")[...]))
        }
        return properties
    }

    /// `text`'s UTF-8 bytes.
    private static func bytes(_ text: String) -> ArraySlice<UInt8> {
        Array(text.utf8)[...]
    }

    /// `items` sorted, joined with `separator`, with `around` before and after (`:a:b:`).
    private static func joined(_ items: Set<ArraySlice<UInt8>>, separator: String, around: String) -> [UInt8] {
        let sorted = items.sorted { $0.lexicographicallyPrecedes($1) }
        return Array(around.utf8) + sorted.joined(separator: Array(separator.utf8)) + Array(around.utf8)
    }

    /// The `KEY<separator>VALUE` lines of `text`; lines without the separator are skipped, as libudev skips them.
    private static func assignments(_ text: [UInt8], separator: UInt8) -> [(ArraySlice<UInt8>, ArraySlice<UInt8>)] {
        text.split(separator: UInt8(ascii: "\n")).compactMap { line in
            line.firstIndex(of: separator).map { (line[..<$0], line[($0 + 1)...]) }
        }
    }

    /// The target of the symbolic link `name` in `directory`, or `nil` if there is none.
    private static func link(_ directory: Int32, _ name: String) -> [UInt8]? {
        withSymbolicLinkTarget(name, in: directory) { Array($0) }
    }

    /// The contents of the file `name` in `directory`, or `nil` if it cannot be read whole.
    private func contents(of directory: Int32, _ name: String) -> [UInt8]? {
        let file = openat(directory, name, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        return read(file)
    }

    /// Everything `file` holds, up to ``fileLimit`` bytes (`nil` when there is more, or a read fails), read into the
    /// reader's buffer and copied at its size; closes it.
    private func read(_ file: Int32) -> [UInt8]? {
        defer { close(file) }
        guard let start = buffer.baseAddress else { return nil }
        var count = 0
        while count < buffer.count {
            let got = Glibc.read(file, start + count, buffer.count - count)
            if got == 0 { return Array(UnsafeRawBufferPointer(rebasing: buffer[..<count])) }
            if got < 0 {
                if errno == EINTR { continue }
                return nil
            }
            count += got
        }
        return nil
    }
}
