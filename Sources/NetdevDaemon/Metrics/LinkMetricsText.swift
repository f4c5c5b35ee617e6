import NetdevSession

/// The per-link metric families (operational state, carrier, addresses, state changes, last change), written as
/// Prometheus text directly rather than registered in swift-prometheus' registry. The registry copies a family's
/// whole table to add one series to it, so registering a host's links is quadratic: at 20,000 links (140,000
/// state series) one render took more than a minute (`make benchmark-daemon LINKS=20000` with 1.6.0). Written
/// here, a render is one pass over the links, in the registry's text form (`# HELP`, `# TYPE`, then
/// `name{labels} value` with gauges as Swift prints a `Double`), in the order of the links' indexes.
///
/// Contract: each link name has one series per family, from the link of the lowest index of that name (two links
/// share a name only in the moment a rename races a new link); a link the counts do not know (yet, or any more)
/// keeps the state changes and last change it showed, and a new one starts at 0 with no last change.
struct LinkMetricsText {
    /// What each link name's series last showed of the counts: its state changes and last change.
    private var shown: [String: MetricsRecorder.LinkActivity] = [:]
    /// Each family's name, `# HELP` and `# TYPE` lines: (state, carrier, addresses, state changes, last change).
    private let names: [[UInt8]]
    private let headers: [[UInt8]]
    /// `,state="off"} ` and the others, in `OperationalState.allCases`' order.
    private let stateLabels: [[UInt8]]

    init(names families: [(name: String, help: String, type: String)]) {
        names = families.map { Array($0.name.utf8) }
        headers = families.map { family in
            var header = Array("# HELP \(family.name) ".utf8)
            for byte in family.help.utf8 {
                if byte == UInt8(ascii: "\\") { header.append(byte) }
                header.append(byte)
            }
            header += Array("\n# TYPE \(family.name) \(family.type)\n".utf8)
            return header
        }
        stateLabels = OperationalState.allCases.map {
            Array(#",state=""#.utf8) + Array($0.rawValue.utf8) + Array(#""} "#.utf8)
        }
    }

    private static let one = Array("1.0\n".utf8)
    private static let zero = Array("0.0\n".utf8)

    /// Appends the families for `model`'s links to `text`, with `counts`' state changes and last change times:
    /// one pass over the links, the text assembled from bytes made once (at 20,000 links, 200,000 series).
    mutating func render(_ model: Model, _ counts: MetricsRecorder.Counts, into text: inout [UInt8]) {
        var named: [String: Link] = [:]
        named.reserveCapacity(model.links.count)
        for link in model.links.values where named[link.name].map({ link.index < $0.index }) ?? true {
            named[link.name] = link
        }
        var shownNow: [String: MetricsRecorder.LinkActivity] = [:]
        shownNow.reserveCapacity(named.count)
        var lines: [Line] = []
        lines.reserveCapacity(named.count)
        for (name, link) in named {
            let activity = counts.links[link.index] ?? shown[name]
            if let activity { shownNow[name] = activity }
            var label = Array(#"{link=""#.utf8)
            Self.appendEscaped(name, to: &label)
            label.append(UInt8(ascii: "\""))
            lines.append(
                Line(
                    label: label, index: link.index, state: link.operationalState, carrier: link.state.hasLowerUp,
                    addresses: link.addresses.count, shown: activity))
        }
        shown = shownNow
        // No link, no family: as the registry, which leaves out families without series.
        guard !lines.isEmpty else { return }
        lines.sort { $0.index < $1.index }
        text.reserveCapacity(text.count + lines.count * 600)
        text += headers[0]
        for line in lines {
            let state = line.state
            for (candidate, stateLabel) in zip(OperationalState.allCases, stateLabels) {
                text += names[0]
                text += line.label
                text += stateLabel
                text += candidate == state ? Self.one : Self.zero
            }
        }
        family(1, lines, into: &text) { line, text in text += line.carrier ? Self.one : Self.zero }
        // A gauge is written as Swift writes a Double: a whole number below 2^53 as its digits and ".0".
        family(2, lines, into: &text) { line, text in
            Self.appendDecimal(line.addresses, to: &text)
            text += Self.pointZero
        }
        family(3, lines, into: &text) { line, text in
            Self.appendDecimal(line.shown?.stateChanges ?? 0, to: &text)
            text.append(UInt8(ascii: "\n"))
        }
        let changed = lines.filter { $0.shown != nil }
        if !changed.isEmpty {
            family(4, changed, into: &text) { line, text in
                text += Array("\(line.shown?.lastChange ?? 0)\n".utf8)
            }
        }
    }

    private func family(
        _ number: Int, _ lines: [Line], into text: inout [UInt8], value: (Line, inout [UInt8]) -> Void
    ) {
        text += headers[number]
        for line in lines {
            text += names[number]
            text += line.label
            text += Self.closing
            value(line, &text)
        }
    }

    /// What one link's series say, taken from the link once (not the whole link, copied for every family).
    private struct Line {
        /// `{link="NAME"`.
        var label: [UInt8]
        var index: Int32
        var state: OperationalState
        var carrier: Bool
        var addresses: Int
        var shown: MetricsRecorder.LinkActivity?
    }

    private static let closing = Array("} ".utf8)
    private static let pointZero = Array(".0\n".utf8)

    /// Appends the decimal digits of `value` (what `String(value)` says, without making a string).
    static func appendDecimal(_ value: Int, to text: inout [UInt8]) {
        guard value != 0 else { return text.append(UInt8(ascii: "0")) }
        if value < 0 { text.append(UInt8(ascii: "-")) }
        let start = text.count
        var rest = value.magnitude
        while rest > 0 {
            text.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        }
        text[start...].reverse()
    }

    /// A label value as the text format escapes it: backslash, double quote and line feed.
    static func appendEscaped(_ value: String, to text: inout [UInt8]) {
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): text.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\""): text.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\n"): text.append(contentsOf: #"\n"#.utf8)
            default: text.append(byte)
            }
        }
    }
}
