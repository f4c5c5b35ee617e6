import Foundation
import Testing

@testable import NetdevDaemon

/// The device source learns that udevd started from inotify events on /run/udev (and /run while that is missing):
/// which watch an event came from decides whether it is udevd's control socket or only a reason to probe.
@Suite("inotify events")
struct InotifyEventTests {
    /// One `struct inotify_event`: wd, mask, cookie, len, then the name NUL-padded to `padded` bytes.
    static func event(watch: Int32, name: String, padded: Int, mask: UInt32 = 0x100) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: watch.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: mask.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(0).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(padded).littleEndian) { bytes += $0 }
        bytes += Array(name.utf8) + [UInt8](repeating: 0, count: padded - name.utf8.count)
        return bytes
    }

    @Test("each event's watch, mask and name, padding dropped; a nameless event (overflow, a watch's end) reads as ''")
    func events() {
        let bytes =
            Self.event(watch: 2, name: "control", padded: 16) + Self.event(watch: -1, name: "", padded: 0, mask: 0x4000)
            + Self.event(watch: 1, name: "udev", padded: 32, mask: 0x80)
        let events = bytes.withUnsafeBytes { Inotify.events(in: $0) }
        #expect(
            events == [
                .init(watch: 2, name: "control", mask: 0x100), .init(watch: -1, name: "", mask: 0x4000),
                .init(watch: 1, name: "udev", mask: 0x80),
            ])
    }

    @Test("a read that ends inside an event's header keeps the whole events before it, and does not trap")
    func truncated() {
        let bytes = Self.event(watch: 3, name: "control", padded: 16) + Self.event(watch: 3, name: "queue", padded: 16)
        #expect(
            bytes[0..<(32 + 10)].withUnsafeBytes { Inotify.events(in: $0) } == [
                .init(watch: 3, name: "control", mask: 0x100)
            ])
    }

    @Test(
        "a real watch's pending events, each with a name of the longest length, are all read, a read's bytes at a time")
    func readsEveryPendingEvent() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inotify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        try #require(fd >= 0)
        defer { close(fd) }
        let watch = inotify_add_watch(fd, directory.path, UInt32(IN_CREATE))
        try #require(watch >= 0)
        // Each event is 16 bytes and 256 of name: ten of them are more than three reads' worth.
        let names = (0..<10).map { index in String(repeating: "\(index)", count: 255) }
        for name in names {
            let file = open(directory.appendingPathComponent(name).path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            try #require(file >= 0)
            close(file)
        }
        var events: [Inotify.Event] = []
        var reads = 0
        Inotify.read(fd) { bytes in
            reads += 1
            events += Inotify.events(in: bytes)
        }
        #expect(events.map(\.name) == names)
        #expect(events.allSatisfy { $0.watch == watch && $0.mask & UInt32(IN_CREATE) != 0 })
        #expect(reads >= 10 * (16 + 256) / Inotify.readBytes)
    }
}
