import NetdevSession

/// The per-link metric families (operational state, carrier, addresses, state changes, last change), written as
/// Prometheus text directly rather than registered in swift-prometheus' registry. The registry copies a family's
/// whole table to add one series to it, so registering a host's links is quadratic: at 20,000 links (140,000
/// state series) one render took more than a minute (`make benchmark-daemon LINKS=20000` with 1.6.0). Written
/// here, a render is one pass over the links, in the registry's text form (`# HELP`, `# TYPE`, then
/// `name{labels} value` with gauges as Swift prints a `Double`), sorted by link name.
///
/// Contract: each link name has one series per family, from the link of the lowest index of that name (two links
/// share a name only in the moment a rename races a new link); a link the counts do not know (yet, or any more)
/// keeps the state changes and last change it showed, and a new one starts at 0 with no last change.
struct LinkMetricsText {
    /// What each link name's series last showed of the counts: its state changes and last change.
    private var shown: [String: MetricsRecorder.LinkActivity] = [:]

    /// The families' names and help texts: (state, carrier, addresses, state changes, last change).
    let names: [(name: String, help: String, type: String)]

    init(names: [(name: String, help: String, type: String)]) {
        self.names = names
    }

    /// Appends the families for `model`'s links to `text`, with `counts`' state changes and last change times.
    mutating func render(_ model: Model, _ counts: MetricsRecorder.Counts, into text: inout [UInt8]) {
        var named: [String: Link] = [:]
        for link in model.links.values where named[link.name].map({ link.index < $0.index }) ?? true {
            named[link.name] = link
        }
        var shownNow: [String: MetricsRecorder.LinkActivity] = [:]
        shownNow.reserveCapacity(named.count)
        let links = named.sorted { $0.key < $1.key }
        for (name, link) in links {
            if let activity = counts.links[link.index] ?? shown[name] { shownNow[name] = activity }
        }
        shown = shownNow
        var lines: [(label: [UInt8], link: Link)] = []
        lines.reserveCapacity(links.count)
        for (name, link) in links {
            var label = Array(#"link=""#.utf8)
            Self.appendEscaped(name, to: &label)
            label.append(UInt8(ascii: "\""))
            lines.append((label, link))
        }
        header(0, into: &text)
        for (label, link) in lines {
            let state = link.operationalState
            for candidate in OperationalState.allCases {
                series(0, label, extra: #",state=""# + candidate.rawValue + "\"", into: &text)
                text.append(contentsOf: (candidate == state ? "1.0" : "0.0").utf8)
                text.append(UInt8(ascii: "\n"))
            }
        }
        family(1, lines, into: &text) { "\(Double($0.state.hasLowerUp ? 1 : 0))" }
        family(2, lines, into: &text) { "\(Double($0.addresses.count))" }
        family(3, lines, into: &text) { link in "\(shownNow[link.name]?.stateChanges ?? 0)" }
        let changed = lines.filter { shownNow[$0.link.name] != nil }
        if !changed.isEmpty {
            family(4, changed, into: &text) { link in "\(shownNow[link.name]?.lastChange ?? 0)" }
        }
    }

    private func family(
        _ number: Int, _ lines: [(label: [UInt8], link: Link)], into text: inout [UInt8], value: (Link) -> String
    ) {
        header(number, into: &text)
        for (label, link) in lines {
            series(number, label, extra: "", into: &text)
            text.append(contentsOf: value(link).utf8)
            text.append(UInt8(ascii: "\n"))
        }
    }

    private func header(_ number: Int, into text: inout [UInt8]) {
        let family = names[number]
        text.append(contentsOf: "# HELP \(family.name) ".utf8)
        for byte in family.help.utf8 {
            if byte == UInt8(ascii: "\\") { text.append(byte) }
            text.append(byte)
        }
        text.append(contentsOf: "\n# TYPE \(family.name) \(family.type)\n".utf8)
    }

    private func series(_ number: Int, _ label: [UInt8], extra: String, into text: inout [UInt8]) {
        text.append(contentsOf: names[number].name.utf8)
        text.append(UInt8(ascii: "{"))
        text.append(contentsOf: label)
        text.append(contentsOf: extra.utf8)
        text.append(contentsOf: "} ".utf8)
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
