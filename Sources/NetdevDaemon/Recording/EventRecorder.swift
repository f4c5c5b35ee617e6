import Dispatch
import JSONCoding
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
    // @unchecked Sendable: `descriptor` is written to only on `writes`, a serial queue; `backlog` is Locked.
    typealias Model = NetdevSession.Model
    typealias Event = NetdevSession.Event
    typealias Effect = NetdevSession.Effect

    private let descriptor: Int32
    private let encoder = JSONTextEncoder()
    private let writes = DispatchQueue(label: "netdevd.record")
    /// Bytes handed to `writes` and not yet written, and whether recording stopped (too many waited, or an event
    /// could not be encoded).
    private let backlog = Locked<(bytes: Int, stopped: Bool)>((0, false))
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
        var encoded: [UInt8]
        do {
            encoded = try encoder.encode(event)
        } catch {
            // A recording with a hole would replay to a different state: stop it, and say so.
            stop(because: "an event could not be encoded (\(error))")
            return
        }
        encoded.append(UInt8(ascii: "\n"))
        append(encoded)
    }

    /// Stops recording for good (later lines are refused) and says why on standard error, once.
    private func stop(because reason: String) {
        let first = backlog.withLock { backlog -> Bool in
            defer { backlog.stopped = true }
            return !backlog.stopped
        }
        if first { writeToStandardError("netdevd: recording stopped: \(reason)\n") }
    }

    private func append(_ line: [UInt8]) {
        let accepted = backlog.withLock { backlog -> Bool in
            guard !backlog.stopped, backlog.bytes + line.count <= Self.maximumWaitingBytes else { return false }
            backlog.bytes += line.count
            return true
        }
        guard accepted else {
            stop(
                because: "the --record file takes writes slower than events come "
                    + "(\(Self.maximumWaitingBytes >> 20) MiB waited)")
            return
        }
        writes.async { [self] in
            defer { backlog.withLock { $0.bytes -= line.count } }
            guard !backlog.withLock({ $0.stopped }) else { return }
            var offset = 0
            while offset < line.count {
                let written = line[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else {
                    stop(because: String(cString: strerror(errno)))
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
