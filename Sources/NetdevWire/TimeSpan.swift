/// A systemd-style time span: `30s`, `500ms`, `2min`, `1h`, `1min 30s`, `2d`, a bare number of seconds, or
/// `infinity`. Shared by the configuration (netdevd) and the command line (`netdevctl wait-online --timeout`), so
/// both accept the same spellings.
///
/// Parsing never traps: a number too large for any timer (`1e300`, `99999999999h`) is refused as too large,
/// not converted, and a span is never negative or NaN.
public enum TimeSpan: Sendable, Equatable {
    /// A finite span, from 0 to ``maximumMilliseconds``.
    case finite(milliseconds: Int)
    /// `infinity`: no limit, where the setting allows one.
    case infinity

    /// The longest finite span accepted: 365 days. Longer is a mistake, or meant `infinity`.
    public static let maximumMilliseconds = 365 * 24 * 3_600_000

    /// Why a text is not a time span.
    public enum Problem: Error, Sendable, Equatable {
        /// Not in the syntax at all.
        case notATimeSpan
        /// Longer than ``TimeSpan/maximumMilliseconds``.
        case tooLarge
    }

    /// Units as systemd spells them (case-sensitive: `m` is a minute, as in systemd).
    private static let units: [Substring: Double] = [
        "usec": 0.001, "us": 0.001, "msec": 1, "ms": 1, "seconds": 1000, "second": 1000, "sec": 1000, "s": 1000,
        "minutes": 60_000, "minute": 60_000, "min": 60_000, "m": 60_000, "hours": 3_600_000, "hour": 3_600_000,
        "hr": 3_600_000, "h": 3_600_000, "days": 86_400_000, "day": 86_400_000, "d": 86_400_000,
        "weeks": 604_800_000, "week": 604_800_000, "w": 604_800_000,
    ]

    /// Parses `text`: one or more `<number><unit>` terms (a bare number alone is seconds), or `infinity`.
    public static func parse(_ text: String) -> Result<TimeSpan, Problem> {
        let trimmed = text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        let text = Substring(String(trimmed))
        if text == "infinity" { return .success(.infinity) }
        var total = 0.0
        var terms = 0
        var rest = text
        while !rest.isEmpty {
            let number = rest.prefix { ("0"..."9").contains($0) || $0 == "." }
            guard number.contains(where: { $0 != "." }), number.count(where: { $0 == "." }) <= 1,
                let value = Double(number)
            else { return .failure(.notATimeSpan) }
            rest = rest.dropFirst(number.count).drop { $0 == " " }
            let unitText = rest.prefix { $0.isLetter }
            let factor: Double
            if unitText.isEmpty {
                // A bare number is seconds, and only as the whole span ("5 3s" is not one).
                guard terms == 0, rest.isEmpty else { return .failure(.notATimeSpan) }
                factor = 1000
            } else {
                guard let unit = units[unitText] else { return .failure(.notATimeSpan) }
                factor = unit
            }
            rest = rest.dropFirst(unitText.count).drop { $0 == " " }
            // A huge number of digits reads as +infinity, which the bound below refuses.
            total += value * factor
            terms += 1
        }
        guard terms > 0 else { return .failure(.notATimeSpan) }
        guard total <= Double(maximumMilliseconds) else { return .failure(.tooLarge) }
        return .success(.finite(milliseconds: Int(total)))
    }

    /// The span in milliseconds, or `nil` if `text` is not a finite one.
    public static func milliseconds(_ text: String) -> Int? {
        guard case .success(.finite(let milliseconds)) = parse(text) else { return nil }
        return milliseconds
    }
}
