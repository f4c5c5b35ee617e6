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

    /// Reads the inotify descriptor `fd` until nothing is pending, handing each read's bytes to `each`. The buffer is
    /// on the stack: every inotify watch of netdevd's reads during bursts (the hook directories' at each event that
    /// looks for hooks), and a 4 KiB allocation per read made glibc merge every small chunk freed since the last.
    static func read(_ fd: Int32, _ each: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { buffer in
            while true {
                let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                each(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
    }
}
