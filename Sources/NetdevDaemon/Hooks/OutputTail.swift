#if canImport(Glibc)
import Glibc
#endif

/// The last `limit` bytes read from a pipe; everything before is read and dropped, so a hook that prints
/// gigabytes costs no memory.
struct OutputTail {
    let limit: Int
    private var bytes: [UInt8] = []
    /// Bytes read and not kept (all but the last `limit`).
    private(set) var dropped = 0

    init(limit: Int) {
        self.limit = limit
    }

    /// Reads what the non-blocking `fd` has now, at most 256 KiB (a hook that never stops writing must not keep
    /// the hooks' queue from its timers and other hooks: the rest waits for the next readiness); returns `false`
    /// at end of file or on an error.
    mutating func readAvailable(from fd: Int32) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16384)
        for _ in 0..<16 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += chunk[0..<count]
                if bytes.count > limit {
                    dropped += bytes.count - limit
                    bytes.removeFirst(bytes.count - limit)
                }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
        return true
    }

    var text: String {
        var view = bytes[...]
        while let last = view.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 {
            view = view.dropLast()
        }
        while let first = view.first, first == 0x0A || first == 0x0D || first == 0x20 || first == 0x09 {
            view = view.dropFirst()
        }
        let kept = String(decoding: view, as: UTF8.self)
        guard dropped > 0, !kept.isEmpty else { return kept }
        // Said once, where the output is: a line longer than the limit is cut, and the reader must know.
        return "[netdevd kept the last \(limit) bytes of this output; the \(dropped) bytes before them were dropped]\n"
            + kept
    }
}
