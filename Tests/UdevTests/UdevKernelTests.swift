import Foundation
import KernelTestSupport
import SystemSupport
import Testing

@testable import Udev

/// Reads a monitor until `count` devices whose sysname starts with `prefix` arrived, or 5 s pass.
private func collect(_ monitor: UdevMonitor, prefix: String, count: Int) throws -> [UdevDevice] {
    var devices: [UdevDevice] = []
    _ = try waitUntil {
        devices += try monitor.readAvailable().devices.filter { $0.sysname.hasPrefix(prefix) }
        return devices.count >= count
    }
    return devices
}

@Suite("Udev against the kernel", .serialized, .tags(.kernel), KernelHarness.enabled)
struct UdevKernelTests {
    @Test("a read takes at most the events asked for; the next read goes on where it stopped, nothing lost")
    func boundedReads() throws {
        let monitor = try UdevMonitor(source: .kernel, subsystems: ["net"])
        try ipBatch((0..<5).map { "link add ubound\($0)a type veth peer name ubound\($0)b" })
        defer { _ = try? ipBatch((0..<5).map { "link del ubound\($0)a" }) }
        var added: [String] = []
        var largest = 0
        _ = try waitUntil {
            let batch = try monitor.readAvailable(upTo: 2)
            largest = max(largest, batch.devices.count)
            for name in batch.devices.map(\.sysname) where name.hasPrefix("ubound") && !added.contains(name) {
                added.append(name)
            }
            return added.count >= 10
        }
        #expect(largest == 2)
        #expect(added.sorted() == (0..<5).flatMap { ["ubound\($0)a", "ubound\($0)b"] }.sorted())
    }

    @Test("auto picks udev when udevd runs, and says so")
    func autoSource() throws {
        #expect(UdevSource.resolvedAuto() == .udev)
        #expect(try UdevMonitor(source: .auto, subsystems: ["net"]).source == .udev)
    }

    @Test(
        "both sources see a veth pair added and removed, in order, with udev's properties from udevd",
        arguments: [UdevSource.udev, .kernel])
    func addAndRemove(source: UdevSource) throws {
        let monitor = try UdevMonitor(source: source, subsystems: ["net"])
        try ip("link", "add", "umon0", "type", "veth", "peer", "name", "umon1")
        let added = try collect(monitor, prefix: "umon", count: 2)
        try ip("link", "del", "umon0")
        let removed = try collect(monitor, prefix: "umon", count: 2)
        #expect(added.map(\.action) == ["add", "add"])
        #expect(Set(added.map(\.sysname)) == ["umon0", "umon1"])
        #expect(removed.map(\.action) == ["remove", "remove"])
        #expect(added.allSatisfy { $0.subsystem == "net" && $0.sequenceNumber != nil && $0.interfaceIndex != nil })
        if source == .udev {
            #expect(added.allSatisfy { $0.properties["ID_NET_DRIVER"] == "veth" })
        }
    }

    @Test(
        "the subsystem filter drops other subsystems' uevents before they are read, and can be changed",
        arguments: [UdevSource.udev, .kernel])
    func subsystemFilter(source: UdevSource) throws {
        let monitor = try UdevMonitor(source: source, subsystems: ["block"])
        try ip("link", "add", "ufil0", "type", "veth", "peer", "name", "ufil1")
        // The kernel queues its uevents before `ip link add` returns; udevd has sent its own once it is settled.
        // A veth pair's uevents are of `net` and `queues`: none may come through a `block` filter (udevd's are
        // dropped by the socket's filter, the kernel's as they are read).
        try run("udevadm", "settle", "-t", "10")
        #expect(try monitor.readAvailable().devices.isEmpty)
        try monitor.filter(subsystems: ["net"])
        #expect(monitor.subsystems == ["net"])
        try ip("link", "del", "ufil0")
        // The socket keeps its queue across the filter change: an `add` of the pair still queued would be read
        // before the removes.
        let removed = try collect(monitor, prefix: "ufil", count: 2)
        #expect(removed.map(\.action) == ["remove", "remove"])
        #expect(removed.allSatisfy { $0.subsystem == "net" })
    }

    @Test("a tap device appears to the monitor and the enumerator")
    func tapAndEnumeration() throws {
        let monitor = try UdevMonitor(source: .udev, subsystems: ["net"])
        try ip("tuntap", "add", "dev", "utap0", "mode", "tap")
        defer { _ = try? ip("tuntap", "del", "dev", "utap0", "mode", "tap") }
        let added = try collect(monitor, prefix: "utap", count: 1)
        #expect(added.first?.action == "add")
        let enumerated = try UdevEnumerator().devices(subsystems: ["net"])
        let names = Set(enumerated.map(\.sysname))
        let links = try jsonObjects(ip("-j", "link", "show")).compactMap { $0["ifname"] as? String }
        #expect(names == Set(links))
        let tap = enumerated.first { $0.sysname == "utap0" }
        #expect(tap?.action == nil)
        #expect(tap?.syspath.hasPrefix("/sys/devices/virtual/net/utap0") == true)
    }

    @Test("the enumerator finds what libudev's enumerator finds, with the same values, for 100 veth pairs too")
    func enumerationMatchesLibudev() throws {
        try ipBatch((0..<50).map { "link add uenum\($0)a type veth peer name uenum\($0)b" })
        defer { _ = try? ipBatch((0..<50).map { "link del uenum\($0)a" }) }
        _ = try? run("udevadm", "settle", "-t", "10")
        let subsystems = ["net", "block", "usb", "tty", "input", "pci"]
        let ours = try UdevEnumerator().devices(subsystems: subsystems).sorted { $0.syspath < $1.syspath }
        let libudev = try UdevEnumerator().enumeratedByLibudev(subsystems: subsystems).sorted {
            $0.syspath < $1.syspath
        }
        #expect(ours.filter { $0.sysname.hasPrefix("uenum") }.count == 100)
        #expect(ours.map(\.syspath) == libudev.map(\.syspath))
        #expect(ours == libudev)
        // Read by two threads (as from 4,000 devices), the same devices in the same order.
        #expect(try UdevEnumerator().devices(subsystems: subsystems, twoReadersFrom: 2) == ours)
    }

    @Test("every network device is read as libudev reads it (veth, bridge, VXLAN, tap), with udev's database")
    func netDevicesMatchLibudev() throws {
        try ipBatch([
            "link add urd0 type veth peer name urd1", "link add urdbr0 type bridge",
            "link add urdvx5 type vxlan id 5 dstport 4789", "tuntap add dev urdtap0 mode tap",
        ])
        defer {
            _ = try? ipBatch(["link del urd0", "link del urdvx5", "link del urdbr0", "tuntap del dev urdtap0 mode tap"])
        }
        _ = try? run("udevadm", "settle", "-t", "10")
        let libudev = Dictionary(
            try UdevEnumerator().enumeratedByLibudev(subsystems: ["net"]).map { ($0.syspath, $0) },
            uniquingKeysWith: { first, _ in first })
        let reader = NetDeviceReader()
        var read = 0
        for path in UdevEnumerator.syspaths(subsystems: ["net"]) where libudev[path] != nil {
            let ours = reader.device(at: path)
            #expect(ours.map(Self.tagsSorted) == libudev[path].map(Self.tagsSorted), "\(path)")
            read += ours == nil ? 0 : 1
        }
        #expect(read == libudev.count && read >= 6)
        #expect(Set(libudev.values.compactMap(\.devtype)).isSuperset(of: ["bridge", "vxlan"]))
        #expect(libudev.values.contains { $0.properties["ID_NET_DRIVER"] == "veth" && $0.properties["TAGS"] != nil })
    }

    /// libudev joins tags and device links in its hash tables' order, which changes from process to process.
    private static func tagsSorted(_ device: UdevDevice) -> UdevDevice {
        var device = device
        var properties = device.properties.dictionary
        for (key, separator) in [("TAGS", ":"), ("CURRENT_TAGS", ":"), ("DEVLINKS", " ")] {
            guard let value = properties[key] else { continue }
            let sorted = value.split(separator: Character(separator)).map(String.init).sorted()
            properties[key] =
                separator == ":" ? ":" + sorted.joined(separator: ":") + ":" : sorted.joined(separator: " ")
        }
        device.properties = DeviceProperties(properties)
        return device
    }

    @Test(
        "a flood of 300 veth pairs into a small receive buffer is reported as an overflow",
        arguments: [UdevSource.kernel, .udev])
    func overflow(source: UdevSource) throws {
        let monitor = try UdevMonitor(source: source, subsystems: ["net"])
        try monitor.setReceiveBuffer(bytes: 4096)
        try ipBatch((0..<300).map { "link add flood\($0)a type veth peer name flood\($0)b" })
        defer { _ = try? ipBatch((0..<300).map { "link del flood\($0)a" }) }
        _ = try? run("udevadm", "settle", "-t", "10")
        var overflowed = false
        var received = 0
        _ = try waitUntil(timeout: 2) {
            let batch = try monitor.readAvailable()
            overflowed = overflowed || batch.overflowed
            received += batch.devices.count
            return overflowed
        }
        #expect(overflowed, "received \(received) of 600 add events without an overflow being reported")
        #expect(received < 600)
    }
}
