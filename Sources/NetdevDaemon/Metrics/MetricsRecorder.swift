import Locking
public import NetdevSession
import Prometheus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What netdevd's metrics need beyond the model: per link, how often its operational state changed and when it last
/// did; per hook, how often it ran and failed; per monitor, how often it lost events; how many events the loop took.
///
/// Fed from what the loop already produces (its journal entries and hook results, noted where the effects are
/// handled, so every change is counted however seldom metrics are read) at a cost of a dictionary update per link
/// change and an atomic increment per event. Its state is behind a ``Locked``; the event count is an `Atomic`.
public final class MetricsRecorder: Sendable {
    /// A link's history as far as netdevd saw it.
    struct LinkActivity: Equatable {
        /// Operational state changes since netdevd first saw the link.
        var stateChanges = 0
        /// Unix time of the last state change, or of when netdevd first saw the link.
        var lastChange: Double
    }

    /// A hook's runs: started (it was executed) and failed (it exited non-zero, was killed, timed out, or could
    /// not be started).
    struct HookCounts: Equatable {
        var started = 0
        var failed = 0
    }

    struct Counts {
        var links: [Int32: LinkActivity] = [:]
        var hooks: [String: HookCounts] = [:]
        var overflows: [String: Int] = [:]

        /// A dictionary keeps its capacity when emptied: after 1,000 links came and went, the table would hold
        /// 1,000 links' room (40 KB, allocated mid-burst, pinning the heap's pages around it) for good. Copied
        /// into a table of its size once three quarters of the room are unused: O(1) per removal, amortised.
        mutating func shrinkLinksIfSparse() {
            guard links.capacity > 64, links.count < links.capacity / 4 else { return }
            var shrunk = [Int32: LinkActivity](minimumCapacity: links.count)
            for (index, activity) in links {
                shrunk[index] = activity
            }
            links = shrunk
        }
    }

    private let counts = Locked(Counts())
    private let events = Atomic<Int>(0)
    private let clock: @Sendable () -> Double
    /// Told when something the model does not show changed (a hook's counts), so a metrics file is written again.
    /// In a struct: a bare closure kept in a generic ``Locked`` would gain a reabstraction thunk at every access
    /// (see ``VarlinkReplier``'s state).
    private struct ChangeHandler {
        var body: (@Sendable () -> Void)?
    }

    private let changed = Locked(ChangeHandler())

    /// A recorder; `clock` gives the Unix time in seconds (the real-time clock unless a test sets one).
    public init(clock: @escaping @Sendable () -> Double = MetricsRecorder.unixTime) {
        self.clock = clock
    }

    /// The real-time clock, in seconds since 1970.
    public static func unixTime() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Counts one event taken by the loop.
    public func noteEvent() {
        events.add(1, ordering: .relaxed)
    }

    /// Events taken by the loop so far.
    var eventCount: Int {
        events.load(ordering: .relaxed)
    }

    /// Notes what the session reported in one step: links added, changed state or removed (an ignored link's too),
    /// monitors that lost events. One clock reading and one lock per step.
    public func note(_ activity: [Activity]) {
        let now = clock()
        counts.withLock { counts in
            for item in activity {
                switch item {
                case .linkAdded(let index): counts.links[index] = LinkActivity(lastChange: now)
                case .linkStateChanged(let index):
                    counts.links[index, default: LinkActivity(lastChange: now)].stateChanges += 1
                    counts.links[index]?.lastChange = now
                case .linkRemoved(let index):
                    counts.links[index] = nil
                    counts.shrinkLinksIfSparse()
                case .eventsLost(let source): counts.overflows[source.rawValue, default: 0] += 1
                }
            }
        }
    }

    /// Counts each hook of a finished run: started unless it was not, failed unless it exited 0 (a hook cancelled
    /// before it started is neither).
    public func note(_ result: HookRunResult) {
        counts.withLock { counts in
            for outcome in result.hooks {
                if case .notStarted(let reason) = outcome.status, reason == HookRunner.cancelledReason { continue }
                var hook = counts.hooks[outcome.name, default: HookCounts()]
                if case .notStarted = outcome.status {} else { hook.started += 1 }
                if outcome.status != .exited(0) { hook.failed += 1 }
                counts.hooks[outcome.name] = hook
            }
        }
        changed.withLock { $0.body }?()
    }

    /// Calls `body` when a count the model does not show changes.
    func onChange(_ body: @escaping @Sendable () -> Void) {
        changed.withLock { $0.body = body }
    }

    /// The room the per-link table has (for the test that it shrinks).
    var linkCapacity: Int {
        counts.withLock { $0.links.capacity }
    }

    /// The counts now.
    func snapshot() -> Counts {
        counts.withLock { $0 }
    }
}
