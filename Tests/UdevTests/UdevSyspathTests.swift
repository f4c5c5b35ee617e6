import Foundation
import Testing

@testable import Udev

/// The enumerator finds a subsystem's devices as links in `/sys/class` and `/sys/bus`, each resolved to the device
/// directory it names.
@Suite("Device paths from sysfs links")
struct UdevSyspathTests {
    @Test("relative and absolute links resolve to the device, entries that are no links stay, dot entries are skipped")
    func resolvesLinks() throws {
        let sysfs = NSTemporaryDirectory() + "netdevd-sysfs-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let files = FileManager.default
        try files.createDirectory(atPath: sysfs + "/class/net", withIntermediateDirectories: true)
        try files.createDirectory(atPath: sysfs + "/bus/net/devices", withIntermediateDirectories: true)
        try files.createSymbolicLink(
            atPath: sysfs + "/class/net/veth0", withDestinationPath: "../../devices/virtual/net/veth0")
        try files.createSymbolicLink(
            atPath: sysfs + "/class/net/eth0", withDestinationPath: "./../.././devices/pci0000:00/0000:00:03.0/net/eth0"
        )
        try files.createSymbolicLink(
            atPath: sysfs + "/bus/net/devices/eth0",
            withDestinationPath: "../../../devices/pci0000:00/0000:00:03.0/net/eth0")
        try files.createSymbolicLink(atPath: sysfs + "/class/net/abs0", withDestinationPath: "/sys/devices/x/abs0")
        // More `..` than the directory is deep: the root stays the root.
        try files.createSymbolicLink(
            atPath: sysfs + "/class/net/deep0", withDestinationPath: String(repeating: "../", count: 12) + "deep0")
        try Data().write(to: URL(fileURLWithPath: sysfs + "/class/net/bonding_masters"))
        try Data().write(to: URL(fileURLWithPath: sysfs + "/class/net/.hidden"))
        let root = sysfs.split(separator: "/").joined(separator: "/")
        #expect(
            UdevEnumerator.syspaths(subsystems: ["net", "net", "../class"], sysfs: sysfs)
                == [
                    "/" + root + "/class/net/bonding_masters",
                    "/" + root + "/devices/pci0000:00/0000:00:03.0/net/eth0",
                    "/" + root + "/devices/virtual/net/veth0",
                    "/sys/devices/x/abs0", "/deep0",
                ].sorted())
    }
}
