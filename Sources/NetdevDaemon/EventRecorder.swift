import Dispatch
import FoundationEssentials
import Locking
import MobiusCore
import NetdevSession
import NetdevWire

#if canImport(Glibc)
import Glibc
#endif

/// Appends the configuration the loop starts with and then every processed event to a file, one JSON line each
/// (`--record`), so a session can be replayed later (``Recording``, ``OfflineReplay``, `netdevd --replay`). Events are encoded on the loop queue, in processing order, and written
/// on a serial queue of the recorder's, so file I/O never blocks the loop; ``flush()`` waits for the writes, 5 s at
/// most. A failed write (a full disk) is reported once on standard error and recording stops; so does a file that
/// takes writes slower than events come (a pipe nobody reads) once 64 MiB wait, so it never grows netdevd's memory
/// or holds up its exit.
final class EventRecorder: MobiusLogger, @unchecked Sendable {
    // @unchecked Sendable: `encoder` is used only by the loop, which calls its logger one event at a time;
    // `failed` only on `writes`, a serial queue. `descriptor` is written to only on `writes`.
    typealias Model = NetdevSession.Model
    typealias Event = NetdevSession.Event
    typealias Effect = NetdevSession.Effect

    private let descriptor: Int32
    private let encoder = JSONEncoder()
    private let writes = DispatchQueue(label: "netdevd.record")
    private var failed = false
    /// Bytes handed to `writes` and not yet written, and whether recording stopped because too many waited.
    private let backlog = Locked<(bytes: Int, overflowed: Bool)>((0, false))
    /// The most bytes that wait for the file.
    static let maximumWaitingBytes = 64 << 20

    /// Opens `path` for appending (created with mode 0644 if missing); `nil`, said on standard error, when it
    /// cannot be.
    init?(path: String) {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            writeToStandardError("netdevd: cannot open --record file \(path): \(String(cString: strerror(errno)))\n")
            return nil
        }
        self.descriptor = descriptor
        encoder.outputFormatting = [.sortedKeys]
    }

    deinit {
        close(descriptor)
    }

    /// The first line: the configuration the loop starts with, so that a replay starts where netdevd did.
    func willInitiate(model: Model) {
        do {
            append(try Recording.startLine(model.configuration, encoder: encoder) + [UInt8(ascii: "\n")])
        } catch {
            // Replayed without it, the recording runs with the default configuration; say so now.
            writeToStandardError("netdevd: --record: cannot write the configuration line: \(error)\n")
        }
    }

    func willUpdate(model: Model, event: Event) {
        guard var encoded = try? encoder.encode(event) else { return }
        encoded.append(UInt8(ascii: "\n"))
        append([UInt8](encoded))
    }

    private func append(_ line: [UInt8]) {
        let (accepted, overflowsNow) = backlog.withLock { backlog -> (Bool, Bool) in
            if backlog.overflowed { return (false, false) }
            guard backlog.bytes + line.count <= Self.maximumWaitingBytes else {
                backlog.overflowed = true
                return (false, true)
            }
            backlog.bytes += line.count
            return (true, false)
        }
        if overflowsNow {
            writeToStandardError(
                "netdevd: recording stopped: the --record file takes writes slower than events come "
                    + "(\(Self.maximumWaitingBytes >> 20) MiB waited)\n")
        }
        guard accepted else { return }
        writes.async { [self] in
            defer { backlog.withLock { $0.bytes -= line.count } }
            guard !failed else { return }
            var offset = 0
            while offset < line.count {
                let written = line[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else {
                    failed = true
                    writeToStandardError("netdevd: recording stopped: \(String(cString: strerror(errno)))\n")
                    return
                }
                offset += written
            }
        }
    }

    /// Waits until every event recorded so far is written, or `timeoutSeconds` (a file that takes nothing, such as a
    /// pipe nobody reads, must not keep netdevd from exiting); says what was left unwritten.
    func flush(timeoutSeconds: Int = 5) {
        let done = DispatchSemaphore(value: 0)
        writes.async { done.signal() }
        if done.wait(timeout: .now() + .seconds(timeoutSeconds)) == .timedOut {
            let left = backlog.withLock { $0.bytes }
            writeToStandardError(
                "netdevd: --record: \(left) bytes not written: the file took nothing for \(timeoutSeconds) s\n")
        }
    }
}
