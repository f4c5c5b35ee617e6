import Foundation
import SystemSupport
import Testing

@testable import Udev

/// A network device read from its files: the kernel's `uevent`, the `subsystem` and `driver` links, udev's database.
@Suite("Network devices read from sysfs and udev's database")
struct NetDeviceReaderTests {
    /// A sysfs device directory and a database directory under a temporary root, removed when the test ends.
    final class Tree {
        let root = NSTemporaryDirectory() + "netdevd-netdev-\(UInt32.random(in: 0...UInt32.max))"
        var database: String { root + "/data" }
        var netClass: String { root + "/class/net" }
        init() throws {
            try FileManager.default.createDirectory(atPath: database, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: self.netClass, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }

        /// A device directory with `uevent`, a `subsystem` link to `subsystem`, and a `driver` link if given.
        func device(_ name: String, uevent: String, subsystem: String = "net", driver: String? = nil) throws -> String {
            let path = root + "/devices/virtual/" + subsystem + "/" + name
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try uevent.write(toFile: path + "/uevent", atomically: false, encoding: .utf8)
            try FileManager.default.createSymbolicLink(
                atPath: path + "/subsystem", withDestinationPath: "../../../../class/" + subsystem)
            if let driver {
                try FileManager.default.createSymbolicLink(
                    atPath: path + "/driver", withDestinationPath: "../../../../bus/platform/drivers/" + driver)
            }
            return path
        }

        func store(_ name: String, _ entry: String) throws {
            try entry.write(toFile: database + "/" + name, atomically: false, encoding: .utf8)
        }
    }

    @Test("uevent variables and udev's properties, tags, device links and time of initialization, as libudev has them")
    func readsEverything() throws {
        let tree = try Tree()
        let path = try tree.device("br!0", uevent: "DEVTYPE=bridge\nINTERFACE=br/0\nIFINDEX=7\nnot a variable\n")
        try tree.store(
            "n7",
            "S:net/by-id/b\nS:net/by-id/a\nI:1234567\nE:ID_NET_NAME=br0\nE:INTERFACE=renamed\nE:EMPTY=\n"
                + "G:zeta\nQ:alpha\nG:alpha\nV:1\nW:3\nL:0\n")
        let device = try #require(NetDeviceReader(databaseDirectory: tree.database).device(at: path))
        #expect(device.syspath == path)
        #expect(device.sysname == "br/0")
        #expect(device.subsystem == "net")
        #expect(device.devtype == "bridge")
        #expect(device.devnode == nil && device.driver == nil && device.action == nil && device.sequenceNumber == nil)
        #expect(
            device.properties.dictionary == [
                "DEVPATH": path, "SUBSYSTEM": "net", "DEVTYPE": "bridge", "INTERFACE": "renamed", "IFINDEX": "7",
                "ID_NET_NAME": "br0", "EMPTY": "", "USEC_INITIALIZED": "1234567",
                "DEVLINKS": "/dev/net/by-id/a /dev/net/by-id/b", "TAGS": ":alpha:zeta:", "CURRENT_TAGS": ":alpha:",
            ])
        #expect(device.interfaceIndex == 7)
    }

    @Test("a device udev has not stored yet has the kernel's variables only; the node and driver are read")
    func notYetInitialized() throws {
        let tree = try Tree()
        let path = try tree.device("tun0", uevent: "INTERFACE=tun0\nIFINDEX=9\nDEVNAME=net/tun9\n", driver: "tun")
        let device = try #require(NetDeviceReader(databaseDirectory: tree.database).device(at: path))
        #expect(device.devnode == "/dev/net/tun9")
        #expect(device.driver == "tun")
        #expect(
            device.properties.dictionary == [
                "DEVPATH": path, "SUBSYSTEM": "net", "INTERFACE": "tun0", "IFINDEX": "9", "DEVNAME": "/dev/net/tun9",
            ])
        // Without udev's database at all (no udevd), the same.
        #expect(NetDeviceReader(databaseDirectory: tree.root + "/none").device(at: path) == device)
    }

    @Test("what is not a readable network device is left to libudev: other subsystems, no index, gone, unreadable")
    func leavesTheRest() throws {
        let tree = try Tree()
        let reader = NetDeviceReader(databaseDirectory: tree.database)
        #expect(reader.device(at: try tree.device("tty0", uevent: "MAJOR=4\nMINOR=0\n", subsystem: "tty")) == nil)
        #expect(reader.device(at: try tree.device("odd0", uevent: "INTERFACE=odd0\n")) == nil)
        #expect(reader.device(at: try tree.device("bad0", uevent: "INTERFACE=bad0\nIFINDEX=../x\n")) == nil)
        #expect(reader.device(at: tree.root + "/devices/virtual/net/gone0") == nil)
        #expect(reader.device(at: tree.netClass + "/bonding_masters") == nil)
        let big = try tree.device("big0", uevent: "IFINDEX=3\nX=" + String(repeating: "x", count: 10_000) + "\n")
        #expect(reader.device(at: big) == nil)
        // A database entry that is there but cannot be read (a directory here) is not taken as "none".
        let stored = try tree.device("dir0", uevent: "IFINDEX=4\n")
        try FileManager.default.createDirectory(atPath: tree.database + "/n4", withIntermediateDirectories: true)
        #expect(reader.device(at: stored) == nil)
    }

    @Test(
        "one reader reads device after device: a long file leaves nothing in the next; a link over a kibibyte is read")
    func readsInTurn() throws {
        let tree = try Tree()
        let reader = NetDeviceReader(databaseDirectory: tree.database)
        let filler = String(repeating: "x", count: 7_000)
        let long = try tree.device("long0", uevent: "INTERFACE=long0\nIFINDEX=5\nX=\(filler)\n")
        let short = try tree.device("short0", uevent: "INTERFACE=short0\nIFINDEX=6\n")
        // A driver link whose target is longer than the first buffer a target is read into.
        let deep = "../../../../bus/platform/" + String(repeating: "drivers/../", count: 120) + "drivers/deep"
        let linked = try tree.device("deep0", uevent: "INTERFACE=deep0\nIFINDEX=8\n")
        try FileManager.default.createSymbolicLink(atPath: linked + "/driver", withDestinationPath: deep)
        #expect(deep.utf8.count > 1_024)

        #expect(reader.device(at: long)?.properties.dictionary["X"] == filler)
        #expect(
            reader.device(at: short)?.properties.dictionary == [
                "DEVPATH": short, "SUBSYSTEM": "net", "INTERFACE": "short0", "IFINDEX": "6",
            ])
        #expect(reader.device(at: linked)?.driver == "deep")
        #expect(withSymbolicLinkTarget(linked + "/driver") { String(decoding: $0, as: UTF8.self) } == deep)
        #expect(withSymbolicLinkTarget(short + "/uevent") { _ in true } == nil)
    }
}
