import JSONCoding
public import NetdevSession
import NetdevWire

/// The text of the `ListLinks` reply, kept with where each link's object lies in it, so that the next reply encodes
/// only the links the session noted changed since (``Model/lastChange``) and copies the others' text. At 20,000
/// links encoding every report costs about 75 ms; a client calling `ListLinks` while links change paid that for
/// every call, and the calls' encoding took the core the loop needed.
///
/// The contract: ``make(for:)`` is byte for byte the text of `["links": model.sortedLinks.map(LinkReport.init)]`
/// as ``JSONTextEncoder`` writes it. The kept text is used only while every model since it was made was noted one
/// sequence after another, each with the links it changed; a change not noted link by link (a resync, a reload), a
/// sequence missed, or more changed links than half the text holds, and the next reply is made whole.
public struct LinkListText: Sendable {
    /// A reply made from one model, to be kept with ``keep(_:latest:)``.
    public struct Made: Sendable {
        /// The reply's text.
        public let text: [UInt8]
        /// The change sequence of the model it was made from.
        let sequence: Int
        /// Each link's object in `text`, by interface index, in increasing order.
        let parts: [(index: Int32, range: Range<Int>)]
        /// How many links' objects were copied from the kept text (the others were encoded).
        public let copied: Int
    }

    /// The last reply kept.
    private var kept: Made?
    /// The sequence of the last model noted, while changes are followed; `nil` when the kept text cannot be used.
    private var followed: Int?
    /// The links changed after the kept text was made, each with the last sequence that changed it.
    private var changed: [Int32: Int] = [:]

    /// Nothing kept.
    public init() {}

    /// Notes a published model: call it for every model the loop publishes, in order.
    public mutating func note(_ model: Model) {
        guard let followed, model.changeSequence != followed else { return }
        guard model.changeSequence == followed + 1, !model.lastChange.everything,
            changed.count + model.lastChange.links.count <= (kept?.parts.count ?? 0) / 2 + 16
        else {
            self = LinkListText()
            return
        }
        for index in model.lastChange.links { changed[index] = model.changeSequence }
        self.followed = model.changeSequence
    }

    /// The kept reply, when it is `model`'s.
    public func current(for model: Model) -> [UInt8]? {
        guard let kept, kept.sequence == model.changeSequence, followed == model.changeSequence, changed.isEmpty
        else { return nil }
        return kept.text
    }

    /// `model`'s reply: the kept text of each link not changed since, a new encoding of the others. `model` is the
    /// last one noted (read together with this value, under the same lock); otherwise every link is encoded.
    public func make(for model: Model) -> Made {
        let usable = followed == model.changeSequence ? kept : nil
        let old = usable?.parts ?? []
        var text = Array("{\"links\":[".utf8)
        text.reserveCapacity(usable?.text.count ?? 0)
        var parts: [(index: Int32, range: Range<Int>)] = []
        parts.reserveCapacity(model.links.count)
        var position = 0
        var copied = 0
        let encoder = JSONTextEncoder()
        for link in model.sortedLinks {
            if !parts.isEmpty { text.append(UInt8(ascii: ",")) }
            while position < old.count && old[position].index < link.index { position += 1 }
            let start = text.count
            if let usable, position < old.count, old[position].index == link.index, changed[link.index] == nil {
                text.append(contentsOf: usable.text[old[position].range])
                copied += 1
            } else {
                // A report is strings, integers and arrays of strings: it always encodes.
                try? encoder.encode(LinkReport(link), appendingTo: &text)
            }
            parts.append((link.index, start..<text.count))
        }
        text.append(contentsOf: "]}".utf8)
        return Made(text: text, sequence: model.changeSequence, parts: parts, copied: copied)
    }

    /// Keeps `made` for the next reply, unless a newer one is kept, or the changes since it was made were not all
    /// followed. `latest` is the sequence of the last model noted.
    public mutating func keep(_ made: Made, latest: Int) {
        if let followed {
            guard made.sequence >= kept?.sequence ?? Int.min, made.sequence <= followed else { return }
            changed = changed.filter { $0.value > made.sequence }
        } else {
            // Not followed since: only a reply of the latest model can be kept.
            guard made.sequence == latest else { return }
            followed = latest
            changed = [:]
        }
        kept = made
    }
}
