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
/// sequence after another, each with the links it changed. A change not noted link by link (a resync, a reload), a
/// sequence missed, or more changed links than half the host's, and the next reply is made whole; a reply made from
/// that model or a later one is kept again, however many models were noted while it was made.
public struct LinkListText: Sendable {
    /// A reply made from one model, to be kept with ``keep(_:)``.
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
    /// The sequence of the last model noted (`nil` before the first).
    private var followed: Int?
    /// Changes are known link by link after this sequence: `changed` holds every link changed since.
    private var since = Int.min
    /// The links changed after `since`, each with the last sequence that changed it.
    private var changed: [Int32: Int] = [:]

    /// Nothing kept.
    public init() {}

    /// Notes a published model: call it for every model the loop publishes, in order.
    public mutating func note(_ model: Model) {
        let sequence = model.changeSequence
        guard sequence != followed else { return }
        defer { followed = sequence }
        guard let followed, sequence == followed + 1, !model.lastChange.everything,
            changed.count + model.lastChange.links.count <= model.links.count / 2 + 16
        else {
            // Not known link by link (or not worth following): no text made before is used again, and changes are
            // followed afresh from here, so a reply made from this model or a later one can be kept.
            kept = nil
            changed = [:]
            since = sequence
            return
        }
        for index in model.lastChange.links { changed[index] = sequence }
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
        var json = JSONOutput(capacity: usable?.text.count ?? 0)
        json.open("{")
        json.key("links")
        json.open("[")
        var parts: [(index: Int32, range: Range<Int>)] = []
        parts.reserveCapacity(model.links.count)
        var position = 0
        var copied = 0
        for link in model.sortedLinks {
            while position < old.count && old[position].index < link.index { position += 1 }
            let start = json.startValue()
            if let usable, position < old.count, old[position].index == link.index, changed[link.index] == nil {
                json.append(encoded: usable.text[old[position].range])
                copied += 1
            } else {
                ReportJSON.append(&json, LinkReport(link))
            }
            parts.append((link.index, start..<json.bytes.count))
        }
        json.close("]")
        json.close("}")
        let text = json.take()
        return Made(text: text, sequence: model.changeSequence, parts: parts, copied: copied)
    }

    /// Keeps `made` for the next reply, unless a newer one is kept, or it was made from a model before the changes
    /// were last followed afresh (the links changed since it are not all known).
    public mutating func keep(_ made: Made) {
        guard let followed, made.sequence >= since, made.sequence <= followed,
            made.sequence >= kept?.sequence ?? Int.min
        else { return }
        changed = changed.filter { $0.value > made.sequence }
        since = made.sequence
        kept = made
    }
}
