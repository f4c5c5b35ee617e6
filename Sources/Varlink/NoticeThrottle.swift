import Locking

/// Lets a kind of notice through at most once per interval and counts those held back, so that a client repeating
/// an offence costs one log line per interval, not one per offence. (A count is said with the next notice of its
/// kind let through; if none comes, it is not said.)
public final class NoticeThrottle: Sendable {
    private let last = Locked<[String: (said: UInt64, heldBack: Int)]>([:])
    private let intervalNanoseconds: UInt64

    /// A throttle letting one notice of each kind through every `intervalSeconds`.
    public init(intervalSeconds: UInt64 = 10) {
        intervalNanoseconds = intervalSeconds * 1_000_000_000
    }

    /// `nil` when a notice of `kind` now is held back; otherwise how many were held back since the last one.
    public func admit(_ kind: String) -> Int? {
        last.withLock { last -> Int? in
            let now = Connection.monotonicNanoseconds()
            if let previous = last[kind], now >= previous.said, now - previous.said < intervalNanoseconds {
                last[kind]?.heldBack += 1
                return nil
            }
            defer { last[kind] = (now, 0) }
            return last[kind]?.heldBack ?? 0
        }
    }

    /// " (and 3 more like it in the last 10 s)" for a count above 0, else nothing.
    public static func suffix(_ heldBack: Int) -> String {
        heldBack > 0 ? " (and \(heldBack) more like it in the last 10 s)" : ""
    }
}
