#if canImport(Glibc)
import Glibc
#endif

/// Times for `netdevctl log --since`, in the forms journalctl takes, and the times entries are printed with.
enum JournalTime {
    /// The accepted forms, for help and for the error a time that does not parse gets.
    static let forms =
        "Times: 'YYYY-MM-DD [HH:MM[:SS]]', 'HH:MM[:SS]' (today), 'now', 'today', 'yesterday', '-30min' or "
        + "'30min ago' (units s, min, h, d, w), '@SECONDS' since the epoch; local time."

    /// `text` as microseconds since the epoch, or `nil` when it is none of ``forms``. Relative forms count from
    /// `now` (µs since the epoch).
    static func parse(_ text: String, now: UInt64 = currentMicroseconds()) -> UInt64? {
        let text = text.trimmingSpaces
        switch text {
        case "now": return now
        case "today": return midnight(of: now, daysBefore: 0)
        case "yesterday": return midnight(of: now, daysBefore: 1)
        default: break
        }
        if text.hasPrefix("@") {
            guard let seconds = Double(text.dropFirst()), seconds >= 0, seconds < 1e13 else { return nil }
            return UInt64(seconds * 1_000_000)
        }
        if text.hasPrefix("-") || text.hasSuffix(" ago") {
            let body = text.hasPrefix("-") ? String(text.dropFirst()) : String(text.dropLast(4))
            guard let span = span(body.trimmingSpaces), span <= now else { return nil }
            return now - span
        }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "T" }).map(String.init)
        switch parts.count {
        case 1 where parts[0].contains("-"):
            return local(date: parts[0], time: "00:00:00")
        case 1:
            guard let midnight = midnight(of: now, daysBefore: 0), let seconds = secondsOfDay(parts[0]) else {
                return nil
            }
            return midnight + UInt64(seconds) * 1_000_000
        case 2:
            return local(date: parts[0], time: parts[1])
        default:
            return nil
        }
    }

    /// `15min`, `2 h`, `1d`: a span in microseconds.
    private static func span(_ text: String) -> UInt64? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard let amount = UInt64(digits), amount < 1_000_000_000 else { return nil }
        let seconds: UInt64
        switch String(text.dropFirst(digits.count)).trimmingSpaces {
        case "s", "sec", "second", "seconds": seconds = 1
        case "m", "min", "minute", "minutes": seconds = 60
        case "h", "hour", "hours": seconds = 3_600
        case "d", "day", "days": seconds = 86_400
        case "w", "week", "weeks": seconds = 604_800
        default: return nil
        }
        return amount * seconds * 1_000_000
    }

    /// `HH:MM` or `HH:MM:SS` as seconds since midnight.
    private static func secondsOfDay(_ text: String) -> Int? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        guard fields.count == 2 || fields.count == 3, !fields.contains(nil) else { return nil }
        let values = fields.compactMap { $0 }
        let (hour, minute, second) = (values[0], values[1], values.count == 3 ? values[2] : 0)
        guard (0..<24).contains(hour), (0..<60).contains(minute), (0..<61).contains(second) else { return nil }
        return hour * 3_600 + minute * 60 + second
    }

    /// `YYYY-MM-DD` at `HH:MM[:SS]`, local time.
    private static func local(date: String, time: String) -> UInt64? {
        let fields = date.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
        guard fields.count == 3, !fields.contains(nil), let seconds = secondsOfDay(time) else { return nil }
        let values = fields.compactMap { $0 }
        guard (1970...9999).contains(values[0]), (1...12).contains(values[1]), (1...31).contains(values[2]) else {
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(values[0] - 1900)
        parts.tm_mon = Int32(values[1] - 1)
        parts.tm_mday = Int32(values[2])
        parts.tm_isdst = -1
        let midnight = mktime(&parts)
        // mktime moves 31 February to March: a day the month does not have is no date.
        guard midnight >= 0, parts.tm_mday == Int32(values[2]) else { return nil }
        return (UInt64(midnight) + UInt64(seconds)) * 1_000_000
    }

    /// Local midnight `daysBefore` days before `now`.
    private static func midnight(of now: UInt64, daysBefore: Int32) -> UInt64? {
        var seconds = time_t(now / 1_000_000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return nil }
        parts.tm_hour = 0
        parts.tm_min = 0
        parts.tm_sec = 0
        parts.tm_mday -= daysBefore
        parts.tm_isdst = -1
        let midnight = mktime(&parts)
        return midnight >= 0 ? UInt64(midnight) * 1_000_000 : nil
    }

    /// Now, in microseconds since the epoch.
    static func currentMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    /// `Nov 26 13:45:01`, local time, as journalctl's short form prints it.
    static func short(_ microseconds: UInt64) -> String {
        format(microseconds, "%b %d %H:%M:%S", utc: false)
    }

    /// `2026-11-26T13:45:01.123456Z`.
    static func rfc3339(_ microseconds: UInt64) -> String {
        let fraction = String(microseconds % 1_000_000)
        return format(microseconds, "%Y-%m-%dT%H:%M:%S", utc: true) + "."
            + String(repeating: "0", count: 6 - fraction.count) + fraction + "Z"
    }

    private static func format(_ microseconds: UInt64, _ pattern: String, utc: Bool) -> String {
        var seconds = time_t(microseconds / 1_000_000)
        var parts = tm()
        guard (utc ? gmtime_r(&seconds, &parts) : localtime_r(&seconds, &parts)) != nil else { return "?" }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, pattern, &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
