import JSONCoding
import NetdevSession

/// The per-link metric families (operational state, carrier, addresses, state changes, last change), written as
/// Prometheus text directly rather than registered in swift-prometheus' registry. The registry copies a family's
/// whole table to add one series to it, so registering a host's links is quadratic: at 20,000 links (140,000
/// state series) one render took more than a minute (`make benchmark-daemon LINKS=20000` with 1.6.0). Written
/// here, a render is one pass over the links, in the registry's text form (`# HELP`, `# TYPE`, then
/// `name{labels} value` with gauges as Swift prints a `Double`), in the order of the links' indexes.
///
/// Contract: each link name has one series per family, from the link of the lowest index of that name (two links
/// share a name only in the moment a rename races a new link); a link the counts do not know (not yet noted) has 0
/// state changes and no last change. Nothing is kept from one render to the next but the fixed pieces: a table of
/// each link's last-change text kept between renders held its 20,000 small arrays, made while the heap grew with the
/// links, scattered over the heap's pages after the links were gone (4,000 links made, `netdevctl metrics`, the
/// links deleted: 4.7 MiB of anonymous memory against 1.4 without the call).
struct LinkMetricsText {
    /// The fixed pieces as the text has them, and as a JSON string has them (for `GetMetrics`' reply).
    private let plain: Pieces
    private let quoted: Pieces

    /// Every fixed piece of the text, one after another: the families' names and `# HELP`/`# TYPE` lines, the state
    /// labels, the values and line ends. The render copies out of this one buffer and the one it makes of the links'
    /// labels. Pieces kept as arrays were retained and released at each of the 200,000 series' copies, each a cache
    /// miss on another array's header: without that a render at 20,000 links takes half the time (`LargeHost`: 69.7
    /// to 34.0 ms).
    private struct Pieces {
        let fixed: [UInt8]
        /// Each family's name, and its `# HELP` and `# TYPE` lines: (state, carrier, addresses, state changes, last
        /// change), in ``fixed``.
        let names: [Range<Int>]
        let headers: [Range<Int>]
        /// `,state="off"} ` and the others, in `OperationalState.allCases`' order, in ``fixed``.
        let stateLabels: [Range<Int>]
        /// `1.0\n`, `0.0\n`, `} `, `.0\n` and `\n`, in ``fixed``.
        let one: Range<Int>
        let zero: Range<Int>
        let closing: Range<Int>
        let pointZero: Range<Int>
        let newline: Range<Int>

        /// The pieces of `families`, each escaped as inside a JSON string when `quoted`.
        init(_ families: [(name: String, help: String, type: String)], quoted: Bool) {
            var fixed: [UInt8] = []
            func add(_ bytes: [UInt8]) -> Range<Int> {
                guard quoted else {
                    fixed += bytes
                    return fixed.count - bytes.count..<fixed.count
                }
                return LinkMetricsText.appendQuoted(bytes[...], to: &fixed)
            }
            names = families.map { add(Array($0.name.utf8)) }
            headers = families.map { family in
                var header = Array("# HELP \(family.name) ".utf8)
                for byte in family.help.utf8 {
                    if byte == UInt8(ascii: "\\") { header.append(byte) }
                    header.append(byte)
                }
                header += Array("\n# TYPE \(family.name) \(family.type)\n".utf8)
                return add(header)
            }
            stateLabels = OperationalState.allCases.map {
                add(Array(#",state=""#.utf8) + Array($0.rawValue.utf8) + Array(#""} "#.utf8))
            }
            one = add(Array("1.0\n".utf8))
            zero = add(Array("0.0\n".utf8))
            closing = add(Array("} ".utf8))
            pointZero = add(Array(".0\n".utf8))
            newline = add(Array("\n".utf8))
            self.fixed = fixed
        }
    }

    init(names families: [(name: String, help: String, type: String)]) {
        plain = Pieces(families, quoted: false)
        quoted = Pieces(families, quoted: true)
    }

    /// Appends `bytes` to `buffer` as a JSON string literal has them between its quotes; returns where they are.
    /// (The quotes are written too, around them, and not part of the range.)
    private static func appendQuoted(_ bytes: ArraySlice<UInt8>, to buffer: inout [UInt8]) -> Range<Int> {
        let start = buffer.count
        bytes.withUnsafeBufferPointer { JSONString.append(utf8: $0, to: &buffer) }
        return start + 1..<buffer.count - 1
    }

    /// Appends the families for `model`'s links to `text`, with `counts`' state changes and last change times:
    /// one pass over the links, the text assembled from bytes made once (at 20,000 links, 200,000 series). When
    /// `quoted`, the text is written as a JSON string has it between its quotes (`GetMetrics`' reply), so that the
    /// 12 MB of it at 20,000 links are not written once and then copied into their reply.
    ///
    /// Whenever `text` holds `chunk` bytes or more, it is handed to `flush` and emptied (its capacity kept): a file
    /// is written as the text is made, never all of it in memory at once (12 MB at 20,000 links, a page fault per
    /// 4 KiB of it, and as much again on the heap's peak). An error `flush` throws ends the render.
    func render<Failure: Error>(
        _ model: Model, _ counts: MetricsRecorder.Counts, into text: inout [UInt8], quoted: Bool = false,
        chunk: Int, flush: ([UInt8]) throws(Failure) -> Void
    ) throws(Failure) {
        let pieces = quoted ? self.quoted : plain
        var lines: [Line] = []
        lines.reserveCapacity(model.links.count)
        // Each name's line: two links share a name only in the moment a rename races a new link, and the series
        // go with the lower index.
        var lineOfName: [String: Int] = [:]
        lineOfName.reserveCapacity(model.links.count)
        // Each line's label, then its last change's text, if it has one.
        var labels = ByteText()
        labels.bytes.reserveCapacity(model.links.count * 48)
        let states = OperationalState.allCases
        // A label as the text has it, quoted from here when the text is a JSON string.
        var scratch: [UInt8] = []
        for link in model.links.values {
            // Read from the link's box at once: its parts are not copied (and their strings retained) field by field.
            let summary = link.summary
            let earlier = lineOfName[summary.name]
            if let earlier, lines[earlier].index < summary.index { continue }
            var label: Range<Int>
            if quoted {
                scratch.removeAll(keepingCapacity: true)
                Self.appendLabel(summary.name, to: &scratch)
                label = Self.appendQuoted(scratch[...], to: &labels.bytes)
            } else {
                let labelStart = labels.bytes.count
                Self.appendLabel(summary.name, to: &labels.bytes)
                label = labelStart..<labels.bytes.count
            }
            let activity = counts.links[summary.index]
            let changeStart = labels.bytes.count
            activity?.lastChange.write(to: &labels)
            let line = Line(
                label: label, index: summary.index, state: states.firstIndex(of: summary.operationalState) ?? 0,
                carrier: summary.hasCarrier, addresses: summary.addresses, stateChanges: activity?.stateChanges ?? 0,
                lastChange: activity == nil ? nil : changeStart..<labels.bytes.count)
            if let earlier {
                lines[earlier] = line
            } else {
                lineOfName[summary.name] = lines.count
                lines.append(line)
            }
        }
        // No link, no family: as the registry, which leaves out families without series.
        guard !lines.isEmpty else { return }
        // In the order of the links' indexes: sorted as 8-byte keys (index, position), then the lines copied once,
        // rather than the lines moved about by the sort (a tenth of a render at 20,000 links).
        var order = lines.indices.map { UInt64(UInt32(bitPattern: lines[$0].index)) << 32 | UInt64($0) }
        order.sort()
        lines = order.map { lines[Int(truncatingIfNeeded: $0 & 0xffff_ffff)] }
        let hasLastChanges = lines.contains { $0.lastChange != nil }
        // Each family's header, then its series a block of lines at a time (room for a block is a few tens of KB,
        // so a text handed on in chunks stays under a chunk and a block).
        for family in 0..<(hasLastChanges ? 5 : 4) {
            text.append(contentsOf: pieces.fixed[pieces.headers[family]])
            var start = 0
            while start < lines.count {
                let end = min(start + Self.blockLines, lines.count)
                Self.append(family, lines[start..<end], pieces, labels.bytes, to: &text)
                if text.count >= chunk {
                    try flush(text)
                    text.removeAll(keepingCapacity: true)
                }
                start = end
            }
        }
    }

    /// The whole text appended to `text` (no chunks).
    func render(_ model: Model, _ counts: MetricsRecorder.Counts, into text: inout [UInt8], quoted: Bool = false) {
        render(model, counts, into: &text, quoted: quoted, chunk: .max) { (_: [UInt8]) throws(Never) in }
    }

    /// Lines written between two looks at the text's size: at most about 80 KB of series.
    private static let blockLines = 128

    /// Appends family `family`'s series for `lines`, their labels in `labels`. Written through a pointer into
    /// room sized once per block: appending each of the 200,000 series' pieces to an array (its uniqueness and
    /// capacity checked each time) was most of a render's instructions.
    private static func append(
        _ family: Int, _ lines: ArraySlice<Line>, _ pieces: Pieces, _ labels: [UInt8], to text: inout [UInt8]
    ) {
        // Each series: the family's name, the label, the label's end and a value of at most 21 digits and ".0\n".
        let longestStateLabel = pieces.stateLabels.map(\.count).max() ?? 0
        let longestValue = max(pieces.one.count, pieces.zero.count, pieces.pointZero.count, pieces.newline.count)
        let name = pieces.names[family].count
        let room = lines.reduce(0) { room, line in
            room
                + (family == 0
                    ? 7 * (name + line.label.count + longestStateLabel + longestValue)
                    : name + line.label.count + pieces.closing.count + 21 + longestValue
                        + (line.lastChange?.count ?? 0))
        }
        let before = text.count
        text.append(contentsOf: repeatElement(0, count: room))
        let written = text.withUnsafeMutableBufferPointer { buffer in
            pieces.fixed.withUnsafeBufferPointer { fixed in
                labels.withUnsafeBufferPointer { labels in
                    lines.withUnsafeBufferPointer { lines in
                        var out = Cursor(buffer, at: before, fixed: fixed, labels: labels)
                        write(family, lines, pieces, &out)
                        return out.position
                    }
                }
            }
        }
        text.removeSubrange(written...)
    }

    /// Writes family `family`'s series for `lines` (not its header), with `pieces`.
    private static func write(
        _ family: Int, _ lines: UnsafeBufferPointer<Line>, _ pieces: Pieces, _ out: inout Cursor
    ) {
        let (one, zero, closing, pointZero, newline) =
            (pieces.one, pieces.zero, pieces.closing, pieces.pointZero, pieces.newline)
        let name = pieces.names[family]
        if family == 0 {
            for line in lines {
                for (number, stateLabel) in pieces.stateLabels.enumerated() {
                    out.put(name)
                    out.putLabel(line.label)
                    out.put(stateLabel)
                    out.put(number == line.state ? one : zero)
                }
            }
            return
        }
        for line in lines {
            if family == 4 && line.lastChange == nil { continue }
            out.put(name)
            out.putLabel(line.label)
            out.put(closing)
            switch family {
            case 1: out.put(line.carrier ? one : zero)
            // A gauge is written as Swift writes a Double: a whole number below 2^53 as its digits and ".0".
            case 2:
                out.putDecimal(line.addresses)
                out.put(pointZero)
            case 3:
                out.putDecimal(line.stateChanges)
                out.put(newline)
            default:
                out.putLabel(line.lastChange ?? 0..<0)
                out.put(newline)
            }
        }
    }

    /// What one link's series say, taken from the link once: plain values (its label and last change are ranges of
    /// the render's label buffer), so copying one retains nothing.
    private struct Line {
        /// `{link="NAME"`.
        var label: Range<Int>
        var index: Int32
        /// The position of the link's state in `OperationalState.allCases`.
        var state: Int
        var carrier: Bool
        var addresses: Int
        var stateChanges: Int
        /// The last change's text, when the counts know the link.
        var lastChange: Range<Int>?
    }

    /// Where the next byte goes, in room the caller has sized for everything written.
    private struct Cursor {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var position: Int
        /// The fixed pieces and the render's labels, copied from.
        let fixed: UnsafeBufferPointer<UInt8>
        let labels: UnsafeBufferPointer<UInt8>

        init(
            _ buffer: UnsafeMutableBufferPointer<UInt8>, at position: Int, fixed: UnsafeBufferPointer<UInt8>,
            labels: UnsafeBufferPointer<UInt8>
        ) {
            self.buffer = buffer
            self.position = position
            self.fixed = fixed
            self.labels = labels
        }

        /// Copies a fixed piece.
        mutating func put(_ range: Range<Int>) {
            copy(fixed, range)
        }

        /// Copies a piece of the labels' buffer.
        mutating func putLabel(_ range: Range<Int>) {
            copy(labels, range)
        }

        private mutating func copy(_ source: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
            precondition(position + range.count <= buffer.count, "the metrics text outgrew its room")
            guard let from = source.baseAddress, let to = buffer.baseAddress else { return }
            (to + position).update(from: from + range.lowerBound, count: range.count)
            position += range.count
        }

        /// The decimal digits of `value`, as `String(value)` says them.
        mutating func putDecimal(_ value: Int) {
            precondition(position + DecimalText.maximumCount <= buffer.count, "the metrics text outgrew its room")
            position += DecimalText.write(value, to: buffer.baseAddress! + position)
        }
    }

    /// Text appended to bytes. A `Double` writes itself to a stream through `_writeASCII` from the digits it made
    /// on the stack, where `description` makes a `String` (on the heap, for the 18 characters of a Unix time): at
    /// 20,000 links one allocation less per link and render.
    private struct ByteText: TextOutputStream {
        var bytes: [UInt8] = []

        mutating func write(_ string: String) {
            bytes.append(contentsOf: string.utf8)
        }

        mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
            bytes.append(contentsOf: buffer)
        }
    }

    /// `{link="NAME"` with the name escaped.
    private static func appendLabel(_ name: String, to text: inout [UInt8]) {
        text.append(contentsOf: #"{link=""#.utf8)
        appendEscaped(name, to: &text)
        text.append(UInt8(ascii: "\""))
    }

    /// A label value as the text format escapes it: backslash, double quote and line feed.
    static func appendEscaped(_ value: String, to text: inout [UInt8]) {
        let needsNone = value.utf8.withContiguousStorageIfAvailable { bytes in
            guard !bytes.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A })
            else { return false }
            text.append(contentsOf: bytes)
            return true
        }
        if needsNone == true { return }
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
