import CommandOptions
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's state rebuilt from `io.netdevd.Monitor` replies: the first carries the whole state, each later one
/// what changed. A change whose sequence does not follow the last one is an error, never a silent gap.
struct MonitorReplies {
    private(set) var state: StateReport?

    /// Applies `reply`; returns the state after it. A reply this netdevctl does not understand is an error, not
    /// skipped: skipping it would show a state that is not netdevd's.
    mutating func apply(_ reply: [String: JSONValue]) throws(CommandFailure) -> StateReport {
        if let first = reply["state"] {
            let decoded = try decode(first, as: StateReport.self, what: "state")
            state = decoded
            return decoded
        }
        guard let current = state else {
            throw CommandFailure(
                status: 1, message: "netdevctl: netdevd's first Monitor reply has no state (a change came first)")
        }
        let change = try decode(reply["change"], as: ChangeReport.self, what: "change")
        guard change.sequence == current.sequence + 1 else {
            throw CommandFailure(
                status: 1,
                message: "netdevctl: netdevd's changes skipped from \(current.sequence) to \(change.sequence)")
        }
        let next = current.applying(change)
        state = next
        return next
    }
}
