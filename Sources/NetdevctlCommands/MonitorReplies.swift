import CommandOptions
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's state rebuilt from `io.netdevd.Monitor` replies: the first carries the whole state, each later one
/// what changed. A change whose sequence does not follow the last one is an error, never a silent gap.
///
/// Links and devices are kept by key, so a change costs what it carries, not the size of the host: at 20,000
/// links a monitor follows a burst without sorting or comparing its whole state for each change.
struct MonitorReplies {
    /// The last state's small parts (sequence, phase, online state, counts); its links and devices are below.
    private var header: StateReport?
    private var links: [Int: LinkReport] = [:]
    /// `nil` when the first state had none (a netdevd that does not send devices).
    private var devices: [String: DeviceReport]?

    /// What one reply did: the first state, or a change with the part of the state it touched, before and after
    /// (only the links and devices the change names, with the small parts in full).
    enum Step {
        case state(StateReport)
        case change(ChangeReport, before: StateReport, after: StateReport)
    }

    /// The whole state now (every link and device, sorted as netdevd sorts them): a pass over the state, for the
    /// callers that need it whole.
    var state: StateReport? {
        header.map { header in
            var state = header
            state.links = links.values.sorted { $0.index < $1.index }
            state.devices = devices.map { $0.values.sorted { $0.precedes($1) } }
            return state
        }
    }

    /// Applies `reply`; returns the state after it. A reply this netdevctl does not understand is an error, not
    /// skipped: skipping it would show a state that is not netdevd's.
    mutating func apply(_ reply: [String: JSONValue]) throws(CommandFailure) -> StateReport {
        _ = try take(reply)
        guard let state else { preconditionFailure("a taken reply leaves a state") }
        return state
    }

    /// Applies `reply` at the cost of what it carries; returns what it did.
    mutating func take(_ reply: [String: JSONValue]) throws(CommandFailure) -> Step {
        if let first = reply["state"] {
            let decoded = try decode(first, as: StateReport.self, what: "state")
            header = Self.header(of: decoded)
            links = Dictionary(decoded.links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
            devices = decoded.devices.map { devices in
                Dictionary(devices.map { ($0.syspath, $0) }, uniquingKeysWith: { _, last in last })
            }
            return .state(decoded)
        }
        guard let current = header else {
            throw CommandFailure(
                status: 1, message: "netdevctl: netdevd's first Monitor reply has no state (a change came first)")
        }
        let change = try decode(reply["change"], as: ChangeReport.self, what: "change")
        guard change.sequence == current.sequence + 1 else {
            throw CommandFailure(
                status: 1,
                message: "netdevctl: netdevd's changes skipped from \(current.sequence) to \(change.sequence)")
        }
        var before = current
        before.devices = devices == nil ? nil : []
        var touchedLinks: Set<Int> = []
        for index in change.removedLinks + change.links.map(\.index) where touchedLinks.insert(index).inserted {
            if let link = links[index] { before.links.append(link) }
        }
        for index in change.removedLinks { links[index] = nil }
        for link in change.links { links[link.index] = link }
        if devices != nil {
            var touchedDevices: Set<String> = []
            for path in change.removedDevices + change.devices.map(\.syspath)
            where touchedDevices.insert(path).inserted {
                if let device = devices?[path] { before.devices?.append(device) }
            }
            for path in change.removedDevices { devices?[path] = nil }
            for device in change.devices { devices?[device.syspath] = device }
        }
        var after = current
        after.takeSmallParts(of: change)
        header = after
        after.links = change.links
        after.devices = devices == nil ? nil : change.devices
        return .change(change, before: before, after: after)
    }

    private static func header(of state: StateReport) -> StateReport {
        var header = state
        header.links = []
        header.devices = nil
        return header
    }
}
