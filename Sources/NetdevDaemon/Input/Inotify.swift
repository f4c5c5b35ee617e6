#if canImport(Glibc)
import Glibc
#endif

/// Reading an inotify descriptor, for netdevd's watches: udevd's `/run/udev` (``DeviceEventSource``), networkd's
/// state files (``NetworkdStateWatcher``) and the hook directories (``HookDirectoryWatch``).
enum Inotify {
    /// One event of a read of inotify events.
    struct Event: Equatable {
        var watch: Int32
        var name: String
        /// What happened (`IN_CREATE`, `IN_IGNORED`, `IN_Q_OVERFLOW`, ...).
        var mask: UInt32 = 0
    }

    /// The events in a read of inotify events (`struct inotify_event`: wd, mask, cookie, len, then `len` bytes of
    /// NUL-padded name).
    static func events(in bytes: UnsafeRawBufferPointer) -> [Event] {
        var events: [Event] = []
        var offset = 0
        let header = 16
        while offset + header <= bytes.count {
            let watch = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let length = bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)
            let end = min(offset + header + Int(length), bytes.count)
            let name = bytes[(offset + header)..<end].prefix { $0 != 0 }
            events.append(Event(watch: watch, name: String(decoding: name, as: UTF8.self), mask: mask))
            offset = end
        }
        return events
    }

    /// The bytes one read takes: the most Swift places on the stack for a temporary allocation (a larger one is a
    /// `malloc` on Linux), and room for three events of the longest name (16 bytes and 256 of name each).
    static let readBytes = 1_024

    /// Reads the inotify descriptor `fd` until nothing is pending, handing each read's bytes to `each`. The buffer is
    /// on the stack: every inotify watch of netdevd's reads during bursts (the hook directories' at each event that
    /// looks for hooks, `/run/udev`'s once a second while udevd is busy), and a 4 KiB buffer, allocated per read, made
    /// glibc merge every small chunk freed since the last: 51 of the loop thread's 3,273 samples in a 20,000-link
    /// delete, and the searches of the merged free lists after it.
    static func read(_ fd: Int32, _ each: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: readBytes, alignment: 8) { buffer in
            while true {
                let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                each(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
    }
}
