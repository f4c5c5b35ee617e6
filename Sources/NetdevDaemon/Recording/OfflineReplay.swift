import JSONCoding
public import NetdevSession
import NetdevWire
public import Syslog
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// A recording run through the session offline (`netdevd --replay`): the journal entries and hook runs it
/// produces, in order, and the final model. Pure: the same recording gives the same output on every run.
public struct OfflineReplay: Sendable {
    /// One thing the session asked for: a journal entry or a hook run, at the step (the event's number, 0 for
    /// the start) that asked.
    public enum Output: Sendable, Equatable {
        /// A journal entry.
        case journal(step: Int, LogEntry)
        /// A hook run.
        case hooks(step: Int, HookRun)
    }

    /// What was produced, in order.
    public var outputs: [Output] = []
    /// The model after the last event.
    public var model: Model

    /// Replays `recording`; journal entries above `maximumPriority` are not made, as in the daemon.
    public init(_ recording: Recording, maximumPriority: LogPriority = .info) {
        let start = Session.initiate(
            Model(configuration: recording.configuration ?? Configuration(), maximumLogPriority: maximumPriority))
        model = start.model
        collect(start.effects, step: 0)
        for (index, event) in recording.events.enumerated() {
            let next = Session.update(model, event)
            model = next.model ?? model
            collect(next.effects, step: index + 1)
        }
    }

    private mutating func collect(_ effects: [Effect], step: Int) {
        for effect in effects {
            switch effect {
            case .log(let entry): outputs.append(.journal(step: step, entry))
            case .runHooks(let run): outputs.append(.hooks(step: step, run))
            default: break
            }
        }
    }

    /// The output for people: one line each, `STEP journal PRIORITY MESSAGE` or `STEP hooks EVENT SUBJECT (run
    /// N)`, then the final state in one line.
    public var text: String {
        var text = ""
        for output in outputs {
            switch output {
            case .journal(let step, let entry):
                text += "\(Self.pad(step)) journal \(Self.priorityName(entry.priority)) \(entry.message)\n"
            case .hooks(let step, let run):
                text += "\(Self.pad(step)) hooks   \(run.event.rawValue) \(run.subjectName) (run \(run.id))\n"
            }
        }
        text +=
            "final: \(quantity(model.links.count, "link")), \(quantity(model.devices.count, "device")), phase \(model.phase.rawValue), "
        text += "online state \(model.onlineState.rawValue)\n"
        return text
    }

    /// The output for scripts: one JSON object per line, `{"step":N,"journal":{...}}` or `{"step":N,"hooks":{...}}`,
    /// then `{"state":{...}}` (the state `Monitor` would send first, devices included).
    public var jsonLines: String {
        let encoder = JSONTextEncoder()
        var text = ""
        func line(_ value: some Encodable) {
            // Dropping is right here: these values are strings, integers and dictionaries of them, which
            // the encoder cannot fail on (only non-finite floats and throwing custom encoders can).
            if let data = try? encoder.encodeToString(value) { text += data + "\n" }
        }
        for output in outputs {
            switch output {
            case .journal(let step, let entry):
                line(JournalLine(step: step, journal: JournalLine.Entry(entry)))
            case .hooks(let step, let run):
                line(HooksLine(step: step, hooks: HooksLine.Run(run)))
            }
        }
        line(["state": StateReport(model, devices: true)])
        return text
    }

    private struct JournalLine: Encodable {
        struct Entry: Encodable {
            var priority: LogPriority
            var messageID: String
            var message: String
            var fields: [String: String]

            init(_ entry: LogEntry) {
                priority = entry.priority
                messageID = entry.kind.id
                message = entry.message
                fields = OfflineReplay.dictionary(entry.fields)
            }
        }
        var step: Int
        var journal: Entry
    }

    private struct HooksLine: Encodable {
        struct Run: Encodable {
            var run: Int
            var event: String
            var subject: String
            var environment: [String: String]

            init(_ run: HookRun) {
                self.run = run.id
                event = run.event.rawValue
                subject = run.subjectName
                environment = OfflineReplay.dictionary(run.environment)
            }
        }
        var step: Int
        var hooks: Run
    }

    /// `fields` by name (a repeated name keeps its last value, as the journal shows it).
    fileprivate static func dictionary(_ fields: [LogField]) -> [String: String] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    private static func pad(_ step: Int) -> String {
        let text = String(step)
        return String(repeating: " ", count: max(0, 6 - text.count)) + text
    }

    private static func priorityName(_ priority: LogPriority) -> String {
        switch priority {
        case .emergency, .alert, .critical, .error: "error  "
        case .warning: "warning"
        case .notice: "notice "
        case .info: "info   "
        case .debug: "debug  "
        }
    }
}
