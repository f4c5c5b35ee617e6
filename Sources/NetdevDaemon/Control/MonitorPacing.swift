extension ControlService {
    /// The least time between two sends to the monitors, in milliseconds, after a quiet spell. A change after a quiet
    /// spell goes at once; while changes keep coming, those of each interval go in one write per monitor. Each send
    /// wakes the monitor queue and every monitor's client: at 20,000 links, where a burst's events trickle in for
    /// minutes, a send every 10 ms held 1 to 4 changes and 10 monitors' sends cost 84 µs each (docs/PERFORMANCE.md).
    public static let monitorSendIntervalMilliseconds = 50

    /// The longest time between two sends while changes keep coming: each send a change waited for doubles the
    /// interval, up to this (``MonitorPacing``). What it costs: while the kernel streams, a change reaches the
    /// monitors up to this much after the loop took it. 20,000 links in one `ip -batch` with 10 monitors: the pool's
    /// threads (the monitors' queue and their connections) switched 10,985 / 18,281 times for the create / delete and
    /// took 2.26 / 1.73 s, against 17,560 / 30,509 and 2.49 / 2.32 s at 50 ms always (docs/PERFORMANCE.md).
    public static let monitorLongestSendIntervalMilliseconds = 250
}

/// When the monitors are sent what was published for them: a change after a quiet spell goes at once; while changes
/// keep coming, no send goes sooner than the interval after the one before, and that interval doubles after each
/// send a change had to wait for, up to the longest. After a quiet spell (no change for the interval and the shortest
/// after a send) it is the shortest again. Times are nanoseconds of one monotonic clock (Dispatch's uptime).
struct MonitorPacing: Sendable, Equatable {
    /// The interval after a quiet spell, in nanoseconds.
    let shortest: UInt64
    /// The longest interval, in nanoseconds.
    let longest: UInt64
    /// The least time from the last send to the next.
    private(set) var interval: UInt64
    /// When the last send took what was published; `nil` before the first.
    private(set) var lastSend: UInt64?

    /// Pacing from `shortestMilliseconds` up to `longestMilliseconds` (at least the shortest).
    init(shortestMilliseconds: Int, longestMilliseconds: Int) {
        shortest = UInt64(max(0, shortestMilliseconds)) * 1_000_000
        longest = max(shortest, UInt64(max(0, longestMilliseconds)) * 1_000_000)
        interval = shortest
    }

    /// When to send a change published at `now`, no send being due yet: `now` after a quiet spell (and the interval
    /// is the shortest again) or once the interval since the last send has passed; otherwise the end of that interval
    /// (and the next interval is then twice as long, up to the longest).
    mutating func sendTime(publishedAt now: UInt64) -> UInt64 {
        guard let lastSend else { return now }
        guard now < lastSend + interval + shortest else {
            interval = shortest
            return now
        }
        let due = lastSend + interval
        guard due > now else { return now }
        interval = min(interval * 2, longest)
        return due
    }

    /// Notes that a send took what was published, at `now`.
    mutating func sent(at now: UInt64) {
        lastSend = now
    }
}
