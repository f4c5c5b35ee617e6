import Foundation
import MobiusCore
import NetdevSession

/// Appends every processed event to a file as one JSON line (`--record`), so a session can be replayed through
/// ``Session/replay(events:from:)`` later. Writes happen on the loop queue, in processing order; a failed write
/// is reported once on standard error and recording stops.
final class EventRecorder: MobiusLogger, @unchecked Sendable {
    // @unchecked Sendable: `handle` and `encoder` are used only from the loop queue, where the loop calls its
    // logger one event at a time; `failed` likewise.
    typealias Model = NetdevSession.Model
    typealias Event = NetdevSession.Event
    typealias Effect = NetdevSession.Effect

    private let handle: FileHandle
    private let encoder = JSONEncoder()
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
        guard !failed else { return }
        do {
            var line = try encoder.encode(event)
            line.append(UInt8(ascii: "\n"))
            try handle.write(contentsOf: line)
        } catch {
            failed = true
            FileHandle.standardError.write(Data("netdevd: recording stopped: \(error)\n".utf8))
        }
    }
}
