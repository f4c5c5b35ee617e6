import Foundation
import KernelTestSupport
import Testing

@testable import Udev

/// Whether udevd runs is read from the kernel's socket table: a socket file alone, as a killed udevd leaves
/// it, is not udevd.
@Suite("udevd status")
struct UdevdStatusTests {
    /// A fresh directory for socket files, removed by the caller.
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "udevd-status-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    /// A Unix socket of `type` bound to `path`, listening if `listen`; the caller closes it.
    static func bound(_ path: String, type: Int32 = Int32(SOCK_SEQPACKET.rawValue), listen: Bool) throws -> Int32 {
        let fd = socket(AF_UNIX, type, 0)
        try #require(fd >= 0)
        let result = withUnixSocketAddress(path) { bind(fd, $0, $1) }
        try #require(result == 0, "bind \(path): errno \(errno)")
        if listen { try #require(Glibc.listen(fd, 8) == 0) }
        return fd
    }

    @Test("a socket listening on the path is running; one bound but not listening, or closed, is not")
    func probeReadsTheSocketTable() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let control = directory + "/control"
        #expect(
            UdevdStatus.probe(controlSocket: control) == .notRunning(reason: "\(control) does not exist"))

        let listening = try Self.bound(control, listen: true)
        #expect(UdevdStatus.probe(controlSocket: control) == .running)
        close(listening)
        // The file stays, as a killed udevd leaves it.
        #expect(FileManager.default.fileExists(atPath: control))
        let stale = UdevdStatus.notRunning(reason: "nothing listens on \(control), left by a udevd that stopped")
        #expect(UdevdStatus.probe(controlSocket: control) == stale)

        try FileManager.default.removeItem(atPath: control)
        let notListening = try Self.bound(control, listen: false)
        defer { close(notListening) }
        #expect(UdevdStatus.probe(controlSocket: control) == stale)
        // Another socket listening elsewhere, on a longer path with this one as its prefix, is not udevd either.
        let other = try Self.bound(control + "2", listen: true)
        defer { close(other) }
        #expect(UdevdStatus.probe(controlSocket: control) == stale)
    }

    @Test("without a readable socket table, the socket file decides")
    func unreadableTable() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let control = directory + "/control"
        close(try Self.bound(control, listen: false))
        #expect(UdevdStatus.probe(controlSocket: control, table: directory + "/no-such-table") == .running)
    }

    @Test("the table's listening flag and exact path decide, whatever the other columns")
    func tableLines() {
        let table = """
            Num       RefCount Protocol Flags    Type St Inode Path
            0000000000000000: 00000002 00000000 00010000 0005 01 12345 /run/udev/control
            0000000000000000: 00000003 00000000 00000000 0001 03 12346 /run/udev/control
            0000000000000000: 00000002 00000000 00010000 0001 01 12347 /run/udev/control with space
            0000000000000000: 00000002 00000000 00000000 0002 01 12348
            """
        let bytes = Array(table.utf8)
        #expect(UdevdStatus.listening(on: "/run/udev/control", in: bytes))
        #expect(UdevdStatus.listening(on: "/run/udev/control with space", in: bytes))
        #expect(!UdevdStatus.listening(on: "/run/udev", in: bytes))
        let connectedOnly = Array(
            table.split(separator: "\n").enumerated().filter { $0.offset != 1 }
                .map(\.element).joined(separator: "\n").utf8)
        #expect(!UdevdStatus.listening(on: "/run/udev/control", in: connectedOnly))
    }
}
