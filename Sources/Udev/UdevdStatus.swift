#if canImport(Glibc)
import Glibc
#endif

/// Whether a udevd is there to send events, as far as netdevd can see without talking to it.
///
/// udevd listens on its control socket (`/run/udev/control`) while it runs; a udevd that crashed, was killed or
/// stopped without systemd holding its sockets leaves the socket file behind, with nothing listening. So the
/// file's existence is not the answer: the kernel's table of Unix sockets in netdevd's network namespace
/// (`/proc/self/net/unix`) is. It is readable without privileges (connecting would need root: the socket is
/// root's, mode 0755, and netdevd's unit runs it as a dynamic user) and udevd never hears of the probe.
public enum UdevdStatus: Sendable, Equatable {
    /// Something listens on the control socket: udevd, or systemd holding it for udevd.
    case running
    /// Nothing does; `reason` says what was found, for the log.
    case notRunning(reason: String)

    /// udevd's control socket.
    public static let controlSocket = "/run/udev/control"

    /// Looks now. When the socket table cannot be read, the socket file's existence decides (the answer before
    /// the table was consulted).
    public static func probe(
        controlSocket: String = controlSocket, table: String = "/proc/self/net/unix"
    )
        -> UdevdStatus
    {
        guard access(controlSocket, F_OK) == 0 else {
            return .notRunning(reason: "\(controlSocket) does not exist")
        }
        guard let bytes = readWhole(table) else { return .running }
        return listening(on: controlSocket, in: bytes)
            ? .running
            : .notRunning(reason: "nothing listens on \(controlSocket), left by a udevd that stopped")
    }

    /// Whether `table` (the text of `/proc/net/unix`) has a listening socket bound to `path`. Its lines are
    /// `Num: RefCount Protocol Flags Type St Inode Path`, the numbers in hexadecimal (but the inode); a listening
    /// socket has `__SO_ACCEPTCON` (0x10000) in its flags.
    static func listening(on path: String, in table: [UInt8]) -> Bool {
        let wanted = Array(path.utf8)
        for line in table.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 7, omittingEmptySubsequences: true)
            guard fields.count == 8, Array(fields[7]) == wanted,
                let flags = UInt32(String(decoding: fields[3], as: UTF8.self), radix: 16)
            else { continue }
            if flags & 0x1_0000 != 0 { return true }
        }
        return false
    }

    /// A whole /proc file (its size is not known before reading), at most 64 MiB; `nil` when it cannot be read.
    private static func readWhole(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < 64 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }
}
