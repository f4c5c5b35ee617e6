import ArgumentParser
import FoundationEssentials
import NetdevDaemon
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// `netdevctl monitor`: the state, then every change, as readable lines or JSON (the whole state after each change).
struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Follow changes: links, states, online state.")

    @OptionGroup var options: CommonOptions

    func run() throws {
        let client = try options.client()
        var replies = MonitorReplies()
        var failure: CommandFailure?
        do {
            try client.callWithMore("io.netdevd.Monitor") { reply in
                let previous = replies.state
                let state: StateReport
                do throws(CommandFailure) {
                    guard let next = try replies.apply(reply) else { return true }
                    state = next
                } catch {
                    failure = error
                    return false
                }
                // Scripts get the whole state after each change; people get what changed.
                if options.printJSON(try? JSONValue(encoding: state)) { return true }
                for line in Self.describe(from: previous, to: state) {
                    print("[\(Self.timestamp())] \(line)")
                }
                fflush(nil)
                return true
            }
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: monitor ended: \(error)")
        }
        if let failure { throw failure }
    }

    /// The local time now as `HH:MM:SS.mmm`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var local = tm()
        localtime_r(&seconds, &local)
        var text = [CChar](repeating: 0, count: 16)
        let count = strftime(&text, text.count, "%H:%M:%S", &local)
        let milliseconds = now.tv_nsec / 1_000_000
        let fraction =
            milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return String(decoding: text[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) + "." + fraction
    }

    /// What changed between two states, one line each.
    static func describe(from old: StateReport?, to new: StateReport) -> [String] {
        guard let old else {
            return ["online state \(Paint.state(new.onlineState)); \(new.links.count) links"]
                + new.links.map { "\($0.name): \(Paint.state($0.operationalState))" }
        }
        var lines: [String] = []
        let before = Dictionary(old.links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        let after = Dictionary(new.links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        for link in new.links {
            guard let was = before[link.index] else {
                lines.append("\(link.name): added, \(Paint.state(link.operationalState))")
                continue
            }
            if was.operationalState != link.operationalState {
                lines.append("\(link.name): \(was.operationalState) → \(Paint.state(link.operationalState))")
            }
            for address in link.addresses where !was.addresses.contains(address) {
                lines.append("\(link.name): address \(address) added")
            }
            for address in was.addresses where !link.addresses.contains(address) {
                lines.append("\(link.name): address \(address) removed")
            }
        }
        for link in old.links where after[link.index] == nil {
            lines.append("\(link.name): removed")
        }
        if old.onlineState != new.onlineState {
            lines.append("online state \(old.onlineState) → \(Paint.state(new.onlineState))")
        }
        if old.phase != new.phase {
            lines.append("netdevd \(new.phase)")
        }
        return lines
    }
}

/// The daemon's state rebuilt from `io.netdevd.Monitor` replies: the first carries the whole state, each later one
/// what changed. A change whose sequence does not follow the last one is an error, never a silent gap.
struct MonitorReplies {
    private(set) var state: StateReport?

    /// Applies `reply`; returns the state after it, or `nil` for a reply this netdevctl does not understand.
    mutating func apply(_ reply: [String: JSONValue]) throws(CommandFailure) -> StateReport? {
        if let first = try? reply["state"]?.decode(as: StateReport.self) {
            state = first
            return first
        }
        guard let current = state, let change = try? reply["change"]?.decode(as: ChangeReport.self) else {
            return nil
        }
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
