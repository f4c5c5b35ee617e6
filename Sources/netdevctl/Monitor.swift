import ArgumentParser
import Foundation
import NetdevDaemon
import Varlink

/// `netdevctl monitor`: the state, then every change, as readable lines or JSON.
struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Follow changes: links, states, online state.")

    @OptionGroup var options: CommonOptions

    func run() throws {
        let client = try options.client()
        var previous: StateReport?
        do {
            try client.callWithMore("io.netdevd.Monitor") { reply in
                if options.printJSON(reply["state"]) { return true }
                guard let state = try? decode(reply["state"], as: StateReport.self) else { return true }
                for line in Self.describe(from: previous, to: state) {
                    print("[\(Self.timestamp())] \(line)")
                }
                fflush(nil)
                previous = state
                return true
            }
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: monitor ended: \(error)")
        }
    }

    static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss.SSS"
        return formatter.string(from: Date())
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
