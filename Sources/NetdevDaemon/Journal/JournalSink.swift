import Dispatch
import NetdevSession
import Syslog
import Systemd

/// Where every journal entry of netdevd goes, and the one place the journal's level applies to the daemon's own
/// messages (the session applies it to its entries before making them, ``Model/maximumLogPriority``).
///
/// The session's entries and what is said from a queue that must not block (the loop's, the server's, the metrics
/// writer's) go through the ``JournalQueue``'s writer thread, in order; what is said at start and stop, from the main
/// thread, is written at once. A journal that fails is reported once on standard error and its losses counted
/// (``ReportingJournal``).
final class JournalSink: Sendable {
    /// The least urgent priority written.
    let maximumPriority: LogPriority
    /// The writer thread's queue.
    let queue: JournalQueue
    private let journal: ReportingJournal

    /// Entries for `target` (the journal if its socket exists, else standard error, when `nil`) up to
    /// `maximumPriority`; the session's entries are made on `loopQueue` (see ``JournalQueue``).
    init(target: JournalTarget?, maximumPriority: LogPriority, loopQueue: DispatchQueue? = nil) {
        let journal = ReportingJournal(
            Journal(identifier: "netdevd", target: target),
            consequence: "netdevd's state is unaffected: netdevctl shows it")
        self.journal = journal
        self.maximumPriority = maximumPriority
        queue = JournalQueue(loopQueue: loopQueue) { item, names in
            switch item {
            case .session(let entry): Self.write(entry, names: names, to: journal)
            case .made(let entry): journal.send(entry)
            }
        }
    }

    /// Writes a daemon message now, if its priority is written: for the main thread at start and stop, and for
    /// queues that may block.
    @Sendable func say(_ priority: LogPriority, _ message: String) {
        guard priority <= maximumPriority else { return }
        journal.send(JournalEntry(message: message, priority: priority))
    }

    /// Queues a daemon message for the writer thread, if its priority is written: for queues that must not block.
    @Sendable func post(_ priority: LogPriority, _ message: String) {
        guard priority <= maximumPriority else { return }
        queue.append(JournalEntry(message: message, priority: priority))
    }

    /// Writes a session entry (made only if its priority is written) with its MESSAGE_ID and fields. (Every kind's id
    /// is valid, which the catalog's tests check; were one not, the entry would still be written, without it.)
    private static func write(_ entry: LogEntry, names: JournalFieldNames, to journal: ReportingJournal) {
        var journalEntry = JournalEntry(
            message: entry.message, priority: entry.priority, messageID: names.messageID(entry.kind.id))
        for field in entry.fields {
            journalEntry.append(names.name(field.name), field.value)
        }
        journal.send(journalEntry)
    }
}
