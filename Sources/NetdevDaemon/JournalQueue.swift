import Dispatch
import Locking
import NetdevSession
import Systemd

/// The session's journal entries on their way to journald, off the loop queue (a send to journald blocks while
/// journald's socket is full). The loop appends; an idle writer is woken at once and takes everything pending, so
/// a burst costs a wake-up of the writer per batch it finds, not one per entry. (Not a short delay to gather more:
/// every Dispatch timer wakes libdispatch's manager thread twice, which cost more than the writes it batched.)
///
/// Field names are normalised once per distinct name (the session uses a handful), not once per entry.
///
/// Bounded: while the writer is blocked (journald stopped but its socket still there, or standard error a pipe
/// nobody reads), at most ``limit`` entries wait; later ones are counted, not kept, and once the writer has written
/// what waited it writes one warning saying how many were dropped. netdevd's state is not affected: what the
/// journal missed, `netdevctl` still shows.
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
        /// Entries not kept since the last batch was taken (the queue was full).
        var dropped = 0
    }

    /// The most entries that wait for the writer.
    let limit: Int

    private let queue = DispatchQueue(label: "netdevd.journal")
    private let pending = Locked(Pending())
    private let write: @Sendable (Item, JournalFieldNames) -> Void
    /// Only used on `queue`.
    private let names = JournalFieldNames()

    /// Entries are handed to `write` in order, on the writer's queue, with the cache of normalised names; at most
    /// `limit` wait (10,000 entries of a few hundred bytes: a few MiB).
    init(limit: Int = 10_000, write: @escaping @Sendable (Item, JournalFieldNames) -> Void) {
        self.limit = limit
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
            guard pending.entries.count < limit else {
                pending.dropped += 1
                return false
            }
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
            // The entries dropped came after those of the batch (they were dropped because it was full) and before
            // any appended once it is taken: the warning goes between.
            let (batch, dropped) = pending.withLock { pending -> ([Item], Int) in
                if pending.entries.isEmpty { pending.scheduled = false }
                defer {
                    pending.entries = []
                    pending.dropped = 0
                }
                return (pending.entries, pending.dropped)
            }
            guard !batch.isEmpty else { return }
            for entry in batch { write(entry, names) }
            if dropped > 0 {
                let warning = JournalEntry(
                    message:
                        "\(dropped) journal entries were dropped: they came while \(limit) waited for the journal, "
                        + "which took none for a while. netdevd's state is unaffected: netdevctl shows it",
                    priority: .warning)
                write(.made(warning), names)
            }
        }
    }
}

/// Normalised journal field names by the session's field name, and parsed message ids by catalog id.
/// `@unchecked Sendable`: used only on the journal queue's thread (``JournalQueue`` hands it to its writer there).
final class JournalFieldNames: @unchecked Sendable {
    private var known: [String: JournalFieldName] = [:]
    private var messageIDs: [String: JournalMessageID] = [:]

    /// The message id of a catalog entry's 32 hex digits, parsed once per kind; `nil` if malformed.
    func messageID(_ hex: String) -> JournalMessageID? {
        if let id = messageIDs[hex] { return id }
        let id = JournalMessageID(hex)
        if let id, messageIDs.count < 1_024 { messageIDs[hex] = id }
        return id
    }

    func name(_ field: String) -> JournalFieldName {
        if let name = known[field] { return name }
        let name = JournalFieldName.normalizing(field)
        if known.count < 1_024 { known[field] = name }
        return name
    }
}
