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
        case "today": return localTime(of: now, daysBefore: 0)
        case "yesterday": return localTime(of: now, daysBefore: 1)
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
            guard let time = timeOfDay(parts[0]) else { return nil }
            return localTime(of: now, daysBefore: 0, at: time)
        case 2:
            return local(date: parts[0], time: parts[1])
        default:
            return nil
        }
    }

    /// `15min`, `2 h`, `1d`: a span in microseconds.
    private static func span(_ text: String) -> UInt64? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard let amount = UInt64(digits) else { return nil }
        let seconds: UInt64
        switch String(text.dropFirst(digits.count)).trimmingSpaces {
        case "s", "sec", "second", "seconds": seconds = 1
        case "m", "min", "minute", "minutes": seconds = 60
        case "h", "hour", "hours": seconds = 3_600
        case "d", "day", "days": seconds = 86_400
        case "w", "week", "weeks": seconds = 604_800
        default: return nil
        }
        let (microseconds, overflow) = amount.multipliedReportingOverflow(by: seconds * 1_000_000)
        return overflow ? nil : microseconds
    }

    /// `HH:MM` or `HH:MM:SS`.
    private static func timeOfDay(_ text: String) -> (hour: Int32, minute: Int32, second: Int32)? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map { Int32($0) }
        guard fields.count == 2 || fields.count == 3, !fields.contains(nil) else { return nil }
        let values = fields.compactMap { $0 }
        let (hour, minute, second) = (values[0], values[1], values.count == 3 ? values[2] : 0)
        guard (0..<24).contains(hour), (0..<60).contains(minute), (0..<61).contains(second) else { return nil }
        return (hour, minute, second)
    }

    /// `YYYY-MM-DD` at `HH:MM[:SS]`, local time.
    private static func local(date: String, time: String) -> UInt64? {
        let fields = date.split(separator: "-", omittingEmptySubsequences: false).map { Int32($0) }
        guard fields.count == 3, !fields.contains(nil), let time = timeOfDay(time) else { return nil }
        let values = fields.compactMap { $0 }
        guard (1970...9999).contains(values[0]), (1...12).contains(values[1]), (1...31).contains(values[2]) else {
            return nil
        }
        var parts = tm()
        parts.tm_year = values[0] - 1900
        parts.tm_mon = values[1] - 1
        parts.tm_mday = values[2]
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = time
        parts.tm_isdst = -1
        let seconds = mktime(&parts)
        // mktime moves 31 February to March: a day the month does not have is no date.
        guard seconds >= 0, parts.tm_mday == values[2] else { return nil }
        return UInt64(seconds) * 1_000_000
    }

    /// `time` (midnight by default) of the local day `daysBefore` days before `now`; the clock's change on a
    /// daylight-saving day is mktime's to apply.
    private static func localTime(
        of now: UInt64, daysBefore: Int32, at time: (hour: Int32, minute: Int32, second: Int32) = (0, 0, 0)
    ) -> UInt64? {
        var seconds = time_t(now / 1_000_000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return nil }
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = time
        parts.tm_mday -= daysBefore
        parts.tm_isdst = -1
        let result = mktime(&parts)
        return result >= 0 ? UInt64(result) * 1_000_000 : nil
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
