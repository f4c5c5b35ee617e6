public import NetdevSession
import NetdevWire
public import Varlink

/// Writes the monitors' changes into their replies' frames, one change for each model published, in the order they
/// were published. What one change shares with the one before is carried over, not made again: the online listing
/// (kept when the change cannot have altered it, ``NetdevWire/ChangeReport/keepsMissing(from:to:)``) and the JSON
/// object of the device counts (written again only when the counts differ: sorting and writing every subsystem's
/// count was more than half of the time spent writing a change's JSON, docs/PERFORMANCE.md).
///
/// Contract: the bytes appended are those of ``ReportJSON/appendChangeParameters(_:to:)`` for each change; the tests
/// compare the two.
public struct ChangeWriter: Sendable {
    /// The last change written: its sequence and its online listing.
    private var last: (sequence: Int, missing: [String]?)?
    /// The device counts of the last change written, and their JSON object.
    private var counts: (counts: [String: Int], text: [UInt8])?

    /// A writer with nothing written yet: its first change's listing is made whole.
    public init() {}

    /// A writer that goes on after `model` was sent whole (its listing is reused for the next change when it can be).
    public init(following model: Model) {
        last = (model.changeSequence, model.onlineMissing)
    }

    /// Appends the change from `previous` to `model` to `replies`, as one more reply.
    public mutating func append(from previous: Model, to model: Model, to replies: inout ContinuingReplies) {
        let oldMissing = last.flatMap { $0.sequence == previous.changeSequence ? .some($0.missing) : nil }
        let change = ChangeReport(from: previous, to: model, oldMissing: oldMissing)
        last = (model.changeSequence, change.onlineMissing)
        // Equal dictionaries that share their storage (the counts no event changed) compare at once.
        if counts?.counts != change.deviceCounts {
            counts = (change.deviceCounts, ReportJSON.deviceCountsText(change.deviceCounts))
        }
        let text = counts?.text
        replies.append { ReportJSON.appendChangeParameters(change, counts: text, to: &$0) }
    }
}
