/// What happened that netdevd's metrics count and the model does not keep: a link's arrival, each change of its
/// operational state and its removal, and each time a monitor lost events. The session reports them as data, in one
/// ``Effect/noteActivity(_:)`` per step, whatever the journal's level, so a metric never depends on a log message's
/// wording or priority.
public enum Activity: Sendable, Equatable {
    /// The link appeared: at the start, after lost events, or when the kernel announced it.
    case linkAdded(index: Int32)
    /// The link's operational state changed.
    case linkStateChanged(index: Int32)
    /// The link went away.
    case linkRemoved(index: Int32)
    /// The monitor of `source` lost events (its socket overflowed) and the state is read again.
    case eventsLost(source: MonitorSource)
}
