internal import CLinux
import Dispatch
import Locking
import NetdevSession
import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// The session's journal entries on their way to journald, off the loop queue (a send to journald blocks while
/// journald's socket is full). The loop appends; the writer, a thread of its own asleep on a semaphore while nothing
/// waits, is woken when it is idle and takes everything pending, so a burst costs a wake-up per batch it finds, not one
/// per entry. The session's entries wake it only once the loop's queue has finished what it is doing (a block queued
/// behind it), so that the entries of one pass of the loop are one batch: woken at the first, the writer took them one
/// or two at a time as the loop made them (docs/PERFORMANCE.md). (Not a short delay to gather more: every Dispatch
/// timer wakes libdispatch's manager thread twice, which cost more than the writes it batched. Not a Dispatch queue
/// either: each wake-up was a block made on the loop's thread and freed on a pool thread, into that thread's cache of
/// blocks, which went back to the heap only when the pool thread exited, 5 s after the burst, after netdevd had
/// returned the burst's memory: the blocks scattered over the heap kept 1.8 MiB of it resident.)
///
/// Field names are normalised once per distinct name (the session uses a handful), not once per entry.
///
/// Bounded: while the writer is blocked (journald stopped but its socket still there, or standard error a pipe
/// nobody reads), at most ``limit`` entries wait; later ones are counted, not kept, and once the writer has written
/// what waited it writes one warning saying how many were dropped. netdevd's state is not affected: what the
/// journal missed, `netdevctl` still shows.
///
/// The thread ends once the queue is gone and what waited is written.
final class JournalQueue: Sendable {
    /// A session entry, or one made elsewhere (a hook's output), kept in one queue so that the journal has them
    /// in the order they happened.
    enum Item: Sendable {
        case session(LogEntry)
        case made(JournalEntry)
    }

    /// The most entries that wait for the writer.
    let limit: Int

    /// The most session entries that wait for the loop's queue to finish before the writer is woken anyway: a pass
    /// that makes thousands (a start on a large host) is written as it goes, and none is dropped for the limit.
    static let gathered = 256

    private let writer: Writer
    /// Where the session's entries are appended; `nil`: they wake the writer at once.
    private let loopQueue: DispatchQueue?

    /// Entries are handed to `write` in order, on the writer's thread, with the cache of normalised names; at most
    /// `limit` wait (10,000 entries of a few hundred bytes: a few MiB). Without a thread (the system refuses one:
    /// `TasksMax=`), a Dispatch queue writes them, as before the thread: never the thread that appends.
    /// `startsThread: false` stands for a system that refuses the thread (tests take that path with it). Session
    /// entries are appended on `loopQueue` when given, and wake the writer once that queue's current work is done
    /// (or at ``gathered`` entries).
    init(
        limit: Int = 10_000, startsThread: Bool = true, loopQueue: DispatchQueue? = nil,
        write: @escaping @Sendable (Item, JournalFieldNames) -> Void
    ) {
        self.limit = limit
        self.loopQueue = loopQueue
        writer = Writer(limit: limit, write: write)
        writer.start(thread: startsThread)
    }

    deinit {
        writer.finish()
    }

    /// Queues a session entry; wakes the writer if it is idle, once the loop's queue is done with its current work.
    func append(_ entry: LogEntry) {
        writer.append(.session(entry), wakeAfter: loopQueue)
    }

    /// Queues an entry made elsewhere (a hook's output), after the session entries queued before it; wakes the writer
    /// if it is idle.
    func append(_ entry: JournalEntry) {
        writer.append(.made(entry), wakeAfter: nil)
    }

    /// Writes every entry queued so far, and waits until they are written.
    func drain() {
        writer.drain()
    }

    /// The writer's side, shared by the queue and the thread.
    private final class Writer: Sendable {
        private struct Pending {
            var entries: [Item] = []
            /// The storage of the batch written last, emptied, for `entries` once the next batch is taken: appends on
            /// the loop's thread then grow no new array per batch (an array of 26 entries is a request over a
            /// kibibyte, which first makes glibc merge every small chunk freed since the last: 27 of the loop
            /// thread's 3,273 samples in a 20,000-link delete). Kept only up to ``keptCapacity`` entries.
            var spare: [Item] = []
            /// The writer has been woken, or is writing a batch, or will be woken (`wakeQueued`): an append need not
            /// wake it.
            var scheduled = false
            /// A block on the loop's queue will wake the writer; until it runs, whoever wakes the writer first clears
            /// this (an append at ``JournalQueue/gathered`` entries, ``drain()``, ``finish()``).
            var wakeQueued = false
            /// Entries not kept since the last batch was taken (the queue was full).
            var dropped = 0
            /// Callers of ``drain()`` waiting for the writer to finish a batch.
            var drainers = 0
            /// No thread of its own: ``fallback`` writes.
            var threadless = false
            /// The queue is gone: the thread ends once nothing waits.
            var finished = false
        }

        let limit: Int
        /// The most entries whose storage a written batch leaves for the next (about 20 KiB).
        static let keptCapacity = 512
        private let pending = Locked(Pending())
        private let wake = DispatchSemaphore(value: 0)
        private let batchWritten = DispatchSemaphore(value: 0)
        private let write: @Sendable (Item, JournalFieldNames) -> Void
        /// Used only by the one thread that writes (the writer's, or, without one, `fallback`'s).
        private let names = JournalFieldNames()
        /// Writes when the system gave no thread (serial: one batch at a time, in order).
        private let fallback = DispatchQueue(label: "netdevd.journal")

        init(limit: Int, write: @escaping @Sendable (Item, JournalFieldNames) -> Void) {
            self.limit = limit
            self.write = write
        }

        func start(thread: Bool) {
            guard thread else {
                pending.withLock { $0.threadless = true }
                return
            }
            let context = Unmanaged.passRetained(self).toOpaque()
            var thread = pthread_t()
            // Made with every signal blocked (a thread starts with its creator's mask): what is sent to netdevd is
            // read from signalfds, or ignored, and should wake nothing here.
            var all = sigset_t()
            var previous = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_SETMASK, &all, &previous)
            let started = pthread_create(
                &thread, nil,
                { context in
                    let writer = Unmanaged<Writer>.fromOpaque(context!).takeRetainedValue()
                    pthread_setname_np(pthread_self(), "netdevd-journal")
                    writer.run()
                    return nil
                }, context)
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            if started == 0 {
                pthread_detach(thread)
            } else {
                Unmanaged<Writer>.fromOpaque(context).release()
                pending.withLock { $0.threadless = true }
            }
        }

        func finish() {
            let wakeWriter = pending.withLock { pending -> Bool in
                pending.finished = true
                defer {
                    pending.scheduled = true
                    pending.wakeQueued = false
                }
                return (!pending.scheduled || pending.wakeQueued) && !pending.threadless
            }
            if wakeWriter { wake.signal() }
        }

        /// What an append does once its entry is queued.
        private enum Wake {
            case none, now, fallback, after(DispatchQueue)
        }

        /// Queues `item`; wakes the writer if it is idle: at once, or with a block queued on `queue`.
        func append(_ item: Item, wakeAfter queue: DispatchQueue?) {
            let action = pending.withLock { pending -> Wake in
                guard pending.entries.count < limit else {
                    pending.dropped += 1
                    return .none
                }
                pending.entries.append(item)
                if pending.wakeQueued {
                    guard pending.entries.count >= JournalQueue.gathered else { return .none }
                    pending.wakeQueued = false
                    return .now
                }
                guard !pending.scheduled else { return .none }
                pending.scheduled = true
                if pending.threadless { return .fallback }
                guard let queue else { return .now }
                pending.wakeQueued = true
                return .after(queue)
            }
            switch action {
            case .none: break
            case .now: wake.signal()
            case .fallback:
                fallback.async { [self] in
                    while writeBatch() {}
                }
            case .after(let queue):
                queue.async { [self] in
                    let due = pending.withLock { pending -> Bool in
                        defer { pending.wakeQueued = false }
                        return pending.wakeQueued
                    }
                    if due { wake.signal() }
                }
            }
        }

        func drain() {
            if pending.withLock({ $0.threadless }) {
                fallback.sync {
                    while writeBatch() {}
                }
                return
            }
            // Let go by the writer after the batch that took everything queued before (or at once when it is idle).
            // The writer is woken now if a block on the loop's queue was to wake it: the caller may be that queue.
            let (waiting, wakeWriter) = pending.withLock { pending -> (Bool, Bool) in
                guard pending.scheduled else { return (false, false) }
                pending.drainers += 1
                defer { pending.wakeQueued = false }
                return (true, pending.wakeQueued)
            }
            if wakeWriter { wake.signal() }
            if waiting { batchWritten.wait() }
        }

        /// The thread: sleeps until woken, writes what waits, and ends once the queue is gone and nothing waits.
        private func run() {
            while true {
                wake.wait()
                while writeBatch() {}
                if pending.withLock({ $0.finished && $0.entries.isEmpty }) { return }
            }
        }

        /// Writes what waits; `false` when nothing did (the writer is then idle, and those waiting in ``drain()``
        /// are let go).
        private func writeBatch() -> Bool {
            // The entries dropped came after those of the batch (they were dropped because it was full) and before
            // any appended once it is taken: the warning goes between. The batch is swapped out, never copied (an array
            // emptied while its storage is shared cannot keep it).
            var batch: [Item] = []
            let (dropped, drainers) = pending.withLock { pending -> (Int, Int) in
                defer {
                    pending.dropped = 0
                    pending.drainers = 0
                }
                if pending.entries.isEmpty && pending.dropped == 0 { pending.scheduled = false }
                swap(&batch, &pending.spare)
                swap(&batch, &pending.entries)
                return (pending.dropped, pending.drainers)
            }
            for entry in batch { write(entry, names) }
            let wrote = !batch.isEmpty || dropped > 0
            if dropped > 0 {
                let warning = JournalEntry(
                    message:
                        "\(dropped) journal entries were dropped: they came while \(limit) waited for the journal, "
                        + "which took none for a while. netdevd's state is unaffected: netdevctl shows it",
                    priority: .warning)
                write(.made(warning), names)
            }
            for _ in 0..<drainers { batchWritten.signal() }
            if batch.capacity > 0 && batch.capacity <= Self.keptCapacity {
                batch.removeAll(keepingCapacity: true)
                pending.withLock { pending in
                    if pending.spare.capacity == 0 { swap(&pending.spare, &batch) }
                }
            }
            return wrote
        }
    }
}
