internal import CLinux
public import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Gives the memory of a burst back to the system once netdevd has been quiet for a second: glibc keeps freed
/// memory in its heap, so without this the RSS after a burst stays at the burst's peak. One timer, armed at the
/// first activity after a quiet spell and re-armed at most once a second while activity goes on.
///
/// The heap is trimmed once more 6 s later, if nothing happened meanwhile. libdispatch's pool threads each keep a
/// cache of the blocks they ran (80 bytes each, made during the burst and so spread over its pages), and free it when
/// they end, 5 s after their last block: after the first trim. Freed then and not trimmed, those blocks kept a page
/// each resident (docs/PERFORMANCE.md: 1.6 MiB after 4,000 links with 10 monitors). So that the second trim comes
/// after those threads have ended, a trim runs on the loop's queue (not on a pool thread, which would then live, and
/// keep its cache, 5 s past it), and what pool threads do for clients counts as activity: the monitors' batches, and
/// every client's replies once written (``VarlinkServer``'s `drained`).
///
/// `@unchecked Sendable`: `armed`, `followUp` and `lastActivity` are read and written only on `queue`, where the
/// timer fires and ``noteActivity()`` is called (``noteActivityElsewhere()`` goes there first, `noteQueued` being
/// atomic).
public final class MemoryTrim: @unchecked Sendable {
    /// From the last activity to the trim.
    private let quiet: UInt64
    /// From a trim to the next, when nothing happened between: the pool threads that worked until the first have
    /// ended by then (libdispatch ends one after 5 s without work).
    private let poolThreadsEnded: UInt64
    private let queue: DispatchQueue
    /// Gives the heap back (`malloc_trim`; a count in the tests).
    private let trimHeap: @Sendable () -> Void
    /// A ``noteActivityElsewhere()`` is on its way to `queue`.
    private let noteQueued = Atomic<Bool>(false)
    private var timer: PollerTimer?
    private var armed = false
    /// The timer is armed for the trim after the pool's threads have ended, not for the one after a quiet second.
    private var followUp = false
    /// When something last happened (``PollerTimer/now()``).
    private var lastActivity: UInt64 = 0

    /// A trim whose timer fires on `queue` (none, if the kernel refuses a timerfd: the memory then stays).
    public convenience init(queue: DispatchQueue) {
        self.init(queue: queue, quiet: 1_000_000_000, poolThreadsEnded: 6_000_000_000) { malloc_trim(0) }
    }

    /// A trim `quiet` nanoseconds after the last activity, and once more `poolThreadsEnded` later, each by `trimHeap`.
    init(
        queue: DispatchQueue, quiet: UInt64, poolThreadsEnded: UInt64, trimHeap: @escaping @Sendable () -> Void
    ) {
        self.queue = queue
        self.quiet = quiet
        self.poolThreadsEnded = poolThreadsEnded
        self.trimHeap = trimHeap
        timer = PollerTimer(queue: queue) { [weak self] in self?.fired() }
    }

    /// Something was done on another queue whose memory is free now (a batch of changes sent to the monitors, a
    /// client's replies written out), maybe after the kernel's messages stopped: noted on the trim's queue,
    /// so the trim comes a quiet second later. One note at a time goes there, however many are made meanwhile.
    func noteActivityElsewhere() {
        guard !noteQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async {
            self.noteQueued.store(false, ordering: .releasing)
            self.noteActivity()
        }
    }

    /// Something was read. On the queue.
    func noteActivity() {
        lastActivity = PollerTimer.now()
        guard !armed || followUp else { return }
        armed = true
        followUp = false
        timer?.schedule(atUptimeNanoseconds: lastActivity + quiet)
    }

    private func fired() {
        if followUp {
            armed = false
            followUp = false
            trimHeap()
            return
        }
        let now = PollerTimer.now()
        let due = lastActivity + quiet
        if now < due {
            timer?.schedule(atUptimeNanoseconds: due)
            return
        }
        followUp = true
        timer?.schedule(atUptimeNanoseconds: now + poolThreadsEnded)
        trimHeap()
    }
}
