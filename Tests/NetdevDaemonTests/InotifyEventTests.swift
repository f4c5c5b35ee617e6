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
}
