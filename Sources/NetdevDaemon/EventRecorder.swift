import Dispatch
import Foundation
import MobiusCore
import NetdevSession

/// Appends every processed event to a file as one JSON line (`--record`), so a session can be replayed through
/// ``Session/replay(events:from:)`` later. Events are encoded on the loop queue, in processing order, and written
/// on a serial queue of the recorder's, so file I/O never blocks the loop; ``flush()`` waits for the writes. A
/// failed write is reported once on standard error and recording stops.
final class EventRecorder: MobiusLogger, @unchecked Sendable {
    // @unchecked Sendable: `encoder` is used only on the loop queue, where the loop calls its logger one event at a
    // time; `handle` and `failed` only on `writes`, a serial queue.
    typealias Model = NetdevSession.Model
    typealias Event = NetdevSession.Event
    typealias Effect = NetdevSession.Effect

    private let handle: FileHandle
    private let encoder = JSONEncoder()
    private let writes = DispatchQueue(label: "netdevd.record")
    private var failed = false

    init?(path: String) {
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            FileHandle.standardError.write(Data("netdevd: cannot open --record file \(path)\n".utf8))
            return nil
        }
        handle.seekToEndOfFile()
        self.handle = handle
        encoder.outputFormatting = [.sortedKeys]
    }

    func willUpdate(model: Model, event: Event) {
        guard var encoded = try? encoder.encode(event) else { return }
        encoded.append(UInt8(ascii: "\n"))
        let line = encoded
        writes.async { [self] in
            guard !failed else { return }
            do {
                try handle.write(contentsOf: line)
            } catch {
                failed = true
                FileHandle.standardError.write(Data("netdevd: recording stopped: \(error)\n".utf8))
            }
        }
    }

    /// Waits until every event recorded so far is written.
    func flush() {
        writes.sync {}
    }
}
