// Recording: `--record FILE` (`EventRecorder`: the configuration and every processed event as JSON lines) and
// `--replay FILE` (`Recording`, read back here, and `OfflineReplay`, run through the session offline).

import JSONCoding
public import NetdevSession
import NetdevWire
import Syslog
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// A `--record` file read back: the configuration netdevd started with (its first line, when the file has it),
/// then every event its loop processed, in order. Contract: a line that is neither is an error naming the file and
/// line, never skipped; a recording made before the first line existed reads with the default configuration; a
/// file that several runs of netdevd appended to reads as its last run (``earlierRuns`` counts the others).
public struct Recording: Sendable, Equatable {
    /// The configuration the loop started with; `nil` when the file does not say.
    public var configuration: Configuration?
    /// The events, in the order the loop processed them.
    public var events: [Event]
    /// Runs of netdevd recorded before the one read (each run starts with its configuration line).
    public var earlierRuns = 0

    /// The first line of a recording: `{"start":{"configuration":{...}}}`.
    struct Start: Codable {
        struct Body: Codable {
            var configuration: Configuration
        }
        var start: Body
    }

    /// A recording of these events.
    public init(configuration: Configuration?, events: [Event]) {
        self.configuration = configuration
        self.events = events
    }

    /// The recording in the file at `path`.
    public init(contentsOf path: String) throws(RecordingError) {
        let bytes: [UInt8]
        switch TextFile.bytes(at: path, limit: 1 << 30) {
        case .success(let read): bytes = read
        case .failure(let problem): throw RecordingError(file: path, line: 0, message: "cannot be read: \(problem)")
        }
        try self.init(text: String(decoding: bytes, as: UTF8.self), file: path)
    }

    /// The recording in `text` (`file` names it in errors).
    public init(text: String, file: String = "-") throws(RecordingError) {
        let decoder = JSONTextDecoder()
        var configuration: Configuration?
        var events: [Event] = []
        var earlierRuns = 0
        for (number, line) in TextFile.lines(text).enumerated() {
            let data = Array(line.utf8)
            if line.allSatisfy(\.isWhitespace) { continue }
            if line.hasPrefix("{\"start\":") {
                let start: Start
                do {
                    start = try decoder.decode(Start.self, from: data)
                } catch {
                    throw RecordingError(
                        file: file, line: number + 1,
                        message: "a run's start line whose configuration cannot be read (\(JSONProblem.words(error)))")
                }
                // Another run appended to the same file: what came before belongs to an earlier run.
                if configuration != nil || !events.isEmpty { earlierRuns += 1 }
                configuration = start.start.configuration
                events = []
                continue
            }
            do {
                events.append(try decoder.decode(Event.self, from: data))
            } catch {
                throw RecordingError(
                    file: file, line: number + 1, message: "not an event netdevd recorded (\(JSONProblem.words(error)))"
                )
            }
        }
        self.init(configuration: configuration, events: events)
        self.earlierRuns = earlierRuns
    }

    /// The first line `--record` writes: the configuration the loop starts with.
    static func startLine(_ configuration: Configuration, encoder: JSONTextEncoder) throws -> [UInt8] {
        try encoder.encode(Start(start: Start.Body(configuration: configuration)))
    }
}

/// A recording that cannot be read: where, and why.
public struct RecordingError: Error, Equatable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// The line (1-based), 0 for the file as a whole.
    public var line: Int
    /// What is wrong.
    public var message: String

    /// `file:line: message`.
    public var description: String {
        line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
    }
}
