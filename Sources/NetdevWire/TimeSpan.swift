/// systemd-style time spans: `30s`, `500ms`, `2min`, `1h`, `1min 30s`, or a bare number of seconds. Shared by
/// the configuration (netdevd) and the command line (`netdevctl wait-online --timeout`), so both accept the
/// same spellings.
public enum TimeSpan {
    /// The span in milliseconds, or `nil` if `text` is not one.
    public static func milliseconds(_ text: String) -> Int? {
        let units: [(String, Double)] = [
            ("usec", 0.001), ("us", 0.001), ("msec", 1), ("ms", 1), ("seconds", 1000), ("second", 1000),
            ("sec", 1000), ("s", 1000), ("minutes", 60_000), ("minute", 60_000), ("min", 60_000), ("m", 60_000),
            ("hours", 3_600_000), ("hour", 3_600_000), ("hr", 3_600_000), ("h", 3_600_000),
        ]
        let trimmed = text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        let text = String(trimmed)
        if let seconds = Double(text) {
            return seconds >= 0 ? Int(seconds * 1000) : nil
        }
        var total = 0.0
        var rest = Substring(text)
        var matchedAny = false
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " }
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count).drop { $0 == " " }
            let unitText = rest.prefix { $0.isLetter }
            guard let unit = units.first(where: { $0.0 == unitText }) else { return nil }
            rest = rest.dropFirst(unitText.count)
            total += value * unit.1
            matchedAny = true
        }
        return matchedAny ? Int(total) : nil
    }
}
