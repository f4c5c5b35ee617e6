import Dispatch
import Locking
import NetdevSession
import Systemd

/// The session's journal entries on their way to journald, off the loop queue (sd_journal_sendv blocks while
/// journald's socket is full). The loop appends; an idle writer is woken at once and takes everything pending, so
/// a burst costs a wake-up of the writer per batch it finds, not one per entry. (Not a short delay to gather more:
/// every Dispatch timer wakes libdispatch's manager thread twice, which cost more than the writes it batched.)
///
/// Field names are normalised once per distinct name (the session uses a handful), not once per entry.
final class JournalQueue: Sendable {
    /// A session entry, or one made elsewhere (a hook's output), kept in one queue so that the journal has them
    /// in the order they happened.
    enum Item: Sendable {
        case session(LogEntry)
        case made(JournalEntry)
    }

    private struct Pending {
        var entries: [Item] = []
        var scheduled = false
    }

    private let queue = DispatchQueue(label: "netdevd.journal")
    private let pending = Locked(Pending())
    private let write: @Sendable (Item, JournalFieldNames) -> Void
    /// Only used on `queue`.
    private let names = JournalFieldNames()

    /// Entries are handed to `write` in order, on the writer's queue, with the cache of normalised names.
    init(write: @escaping @Sendable (Item, JournalFieldNames) -> Void) {
        self.write = write
    }

    /// Queues a session entry; wakes the writer if it is idle.
    func append(_ entry: LogEntry) {
        append(item: .session(entry))
    }

    /// Queues an entry made elsewhere (a hook's output), after the session entries queued before it.
    func append(_ entry: JournalEntry) {
        append(item: .made(entry))
    }

    private func append(item: Item) {
        let wake = pending.withLock { pending -> Bool in
            pending.entries.append(item)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        if wake {
            queue.async { [self] in drainPending() }
        }
    }

    /// Writes every entry queued so far, and waits until they are written.
    func drain() {
        queue.sync { drainPending() }
    }

    private func drainPending() {
        while true {
            let batch = pending.withLock { pending -> [Item] in
                if pending.entries.isEmpty { pending.scheduled = false }
                defer { pending.entries = [] }
                return pending.entries
            }
            guard !batch.isEmpty else { return }
            for entry in batch { write(entry, names) }
        }
    }
}

/// Normalised journal field names by the session's field name. `@unchecked Sendable`: used only on the journal
/// queue's thread (``JournalQueue`` hands it to its writer there).
final class JournalFieldNames: @unchecked Sendable {
    private var known: [String: JournalFieldName] = [:]

    func name(_ field: String) -> JournalFieldName {
        if let name = known[field] { return name }
        let name = JournalFieldName.normalizing(field)
        if known.count < 1_024 { known[field] = name }
        return name
    }
}
