public import Logging
public import Syslog

/// A swift-log `LogHandler` that writes each log record as a structured ``JournalEntry``: the level becomes
/// `PRIORITY`, the source location `CODE_FILE` / `CODE_LINE` / `CODE_FUNC`, the logger's label `LOGGER`, and
/// every metadata key a field (normalised to journald's rules, so `ifname` becomes `IFNAME`).
///
/// A metadata value `.string` or `.stringConvertible` is written as its text; dictionaries and arrays as their
/// description. Writing never throws into the caller: the journal is a ``ReportingJournal``, so a failed write is
/// counted in ``droppedEntries``, reported once on standard error, and the loss said once the journal takes entries
/// again.
public struct JournalLogHandler: LogHandler {
    /// The logger's metadata, merged under each record's metadata.
    public var metadata: Logger.Metadata = [:]
    /// The lowest level written.
    public var logLevel: Logger.Level = .info

    private let label: String
    private let journal: ReportingJournal

    /// A handler for the logger `label`, writing to `journal`.
    public init(label: String, journal: Journal) {
        self.label = label
        self.journal = ReportingJournal(journal)
    }

    /// Entries that could not be written since the handler was made.
    public var droppedEntries: Int {
        journal.lostEntries
    }

    /// Reads or writes one metadata value.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one record; an attached error becomes an `ERROR` field.
    public func log(event: LogEvent) {
        var entry = JournalEntry(message: event.message.description, priority: Self.priority(of: event.level))
        entry.append(.codeFile, event.file)
        entry.append(.codeLine, String(event.line))
        entry.append(.codeFunction, event.function)
        entry.append(.normalizing("LOGGER"), label)
        if let error = event.error {
            entry.append(.normalizing("ERROR"), String(describing: error))
        }
        let merged = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
        for key in merged.keys.sorted() {
            guard let value = merged[key] else { continue }
            if key == "MESSAGE_ID", case .string(let text) = value, let id = JournalMessageID(text) {
                entry.append(.messageID, id.hex)
            } else {
                entry.append(.normalizing(key), Self.text(of: value))
            }
        }
        journal.send(entry)
    }

    /// The journal priority of a swift-log level.
    public static func priority(of level: Logger.Level) -> LogPriority {
        switch level {
        case .trace, .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical: .critical
        }
    }

    private static func text(of value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .dictionary, .array: value.description
        }
    }
}
