/// A log entry's importance, as syslog numbers it and journald's `PRIORITY=` field holds it. Lower is more
/// important: a logger that keeps entries up to a level keeps every priority `<=` that level. The one priority type
/// of the journal library and of everything that makes entries for it.
public enum LogPriority: Int, Codable, Sendable, Comparable, CaseIterable {
    /// The system is unusable (0).
    case emergency = 0
    /// Action must be taken now (1).
    case alert = 1
    /// A critical condition (2).
    case critical = 2
    /// Something failed (3).
    case error = 3
    /// Something is wrong or may be soon (4).
    case warning = 4
    /// Normal but significant: a start, a stop, a reload (5).
    case notice = 5
    /// What happened (6).
    case info = 6
    /// Details for whoever looks for them (7).
    case debug = 7

    /// Lower values are more important.
    public static func < (lhs: LogPriority, rhs: LogPriority) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
