import KernelTestSupport
import NetdevWire
import Testing
import Varlink

@testable import NetdevctlCommands

/// `netdevctl monitor` and `wait-online` rebuild netdevd's state from its Monitor replies: a reply they cannot read
/// stops them with a reason, never a state shown that is not netdevd's.
@Suite("Monitor replies")
struct MonitorRepliesTests {
    static func state(_ sequence: Int, online: String = "offline") -> StateReport {
        StateReport(
            sequence: sequence, phase: "running", onlineState: online, links: [], devices: [], deviceCounts: [:],
            resyncs: 0, staleHookRunsDropped: 0)
    }

    static func change(_ sequence: Int, online: String) -> ChangeReport {
        ChangeReport(
            sequence: sequence, phase: "running", onlineState: online, links: [], removedLinks: [], devices: [],
            removedDevices: [], deviceCounts: [:], resyncs: 0, staleHookRunsDropped: 0)
    }

    /// The message `apply` fails with, or `nil` when it applies.
    static func failure(_ replies: inout MonitorReplies, _ reply: [String: JSONValue]) -> String? {
        do {
            _ = try replies.apply(reply)
            return nil
        } catch {
            return error.message
        }
    }

    @Test("the first state, then changes in sequence, give netdevd's state")
    func inSequence() throws {
        var replies = MonitorReplies()
        #expect(try replies.apply(["state": JSONValue(encoding: Self.state(4))]).sequence == 4)
        let next = try replies.apply(["change": JSONValue(encoding: Self.change(5, online: "online"))])
        #expect(next.sequence == 5 && next.onlineState == "online")
    }

    @Test("a reply it cannot read, or a change before any state, is an error with a reason")
    func notUnderstood() throws {
        var replies = MonitorReplies()
        let early = Self.failure(&replies, ["change": try JSONValue(encoding: Self.change(1, online: "online"))])
        #expect(early?.contains("first Monitor reply has no state") == true, "\(early ?? "applied")")
        let badState = Self.failure(&replies, ["state": .string("everything")])
        #expect(badState?.contains("netdevd sent a state this netdevctl does not understand") == true)
        _ = try replies.apply(["state": JSONValue(encoding: Self.state(1))])
        let unknown = Self.failure(&replies, ["news": .bool(true)])
        #expect(unknown?.contains("netdevd sent a change this netdevctl does not understand") == true)
        let skipped = Self.failure(&replies, ["change": try JSONValue(encoding: Self.change(3, online: "online"))])
        #expect(skipped?.contains("skipped from 1 to 3") == true)
        #expect(replies.state?.sequence == 1, "a refused reply changed the state")
    }
}

/// `netdevctl monitor` works from each change alone (the links and devices it names), never from its whole state:
/// what it prints for a change, and the filtered changes `--changes` prints, must agree with the whole state.
@Suite("Monitor changes, filtered")
struct MonitorChangeTests {
    static func link(_ index: Int, _ name: String, _ state: String) -> LinkReport {
        LinkReport(
            index: index, name: name, type: "veth", macAddress: nil, mtu: 1500, operationalState: state,
            addresses: [], gateways: [])
    }

    static func device(_ name: String, _ subsystem: String, _ serial: Int) -> DeviceReport {
        DeviceReport(
            syspath: "/sys/class/\(subsystem)/\(name)", sysname: name, subsystem: subsystem,
            properties: ["ID_SERIAL": "\(serial)"])
    }

    @Test("filtered changes applied to the filtered first state give the filtered whole state, renames included")
    func filteredChangesRebuildTheFilteredState() throws {
        var generator = SeededGenerator(seed: 0x6d6f_6e)
        let filters = [
            MonitorFilter(patterns: ["eth*"]), MonitorFilter(subsystems: ["tty"]),
            MonitorFilter(links: false), MonitorFilter(devices: false), MonitorFilter(),
        ]
        for filter in filters {
            var replies = MonitorReplies()
            var links: [Int: LinkReport] = [:]
            var devices: [String: DeviceReport] = [:]
            let first = StateReport(
                sequence: 1, phase: "running", onlineState: "offline", links: [], devices: [], deviceCounts: [:],
                resyncs: 0, staleHookRunsDropped: 0)
            guard case .state(let state) = try replies.take(["state": JSONValue(encoding: first)]) else {
                Issue.record("the first reply is not a state")
                return
            }
            var held = filter.apply(state)
            for sequence in 2...400 {
                let previous = links
                var changed: [LinkReport] = []
                var removed: [Int] = []
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let index = Int.random(in: 2...9, using: &generator)
                    if Bool.random(using: &generator), links[index] != nil {
                        removed.append(index)
                        links[index] = nil
                        changed.removeAll { $0.index == index }
                    } else {
                        let name = Bool.random(using: &generator) ? "eth\(index)" : "wan\(index)"
                        let next = Self.link(index, name, ["off", "carrier"].randomElement(using: &generator)!)
                        links[index] = next
                        removed.removeAll { $0 == index }
                        changed.removeAll { $0.index == index }
                        changed.append(next)
                    }
                }
                let name = ["sda", "ttyS0", "ttyS1"].randomElement(using: &generator)!
                let device = Self.device(
                    name, name.hasPrefix("tty") ? "tty" : "block", Int.random(in: 0...2, using: &generator))
                let gone = Bool.random(using: &generator) && devices[device.syspath] != nil
                devices[device.syspath] = gone ? nil : device
                let change = ChangeReport(
                    sequence: sequence, phase: "running", onlineState: "offline", links: changed,
                    removedLinks: removed, devices: gone ? [] : [device], removedDevices: gone ? [device.syspath] : [],
                    deviceCounts: [:], resyncs: 0, staleHookRunsDropped: 0)
                guard case .change(_, let before, let after) = try replies.take(["change": JSONValue(encoding: change)])
                else {
                    Issue.record("a change reply was not taken as a change")
                    return
                }
                held = held.applying(filter.apply(change, before: before))
                let whole = try #require(replies.state)
                #expect(held == filter.apply(whole), "filter \(filter), change \(sequence)")
                #expect(Set(whole.links.map(\.index)) == Set(links.keys))
                // The state before the change holds each touched link as it was, and only those.
                let touched = Set(removed + changed.map(\.index))
                #expect(
                    before.links.sorted { $0.index < $1.index }
                        == touched.sorted().compactMap { previous[$0] })
                let lines = Monitor.describe(from: filter.apply(before), to: filter.apply(after), filter: filter)
                for link in changed
                where filter.admits(link) && before.links.first(where: { $0.index == link.index }) == nil {
                    #expect(lines.contains("\(link.name): added, \(link.operationalState)"), "\(lines)")
                }
            }
        }
    }
}

@Suite("wait-online's lines")
struct WaitOnlineLinesTests {
    static func link(_ index: Int, _ name: String, _ state: String) -> LinkReport {
        MonitorChangeTests.link(index, name, state)
    }

    @Test("a pattern matching more links short of it than a line names counts them; fewer are each named")
    func counted() {
        let many = (0..<40).map { Self.link(10 + $0, "veth\($0)", $0 < 5 ? "routable" : "carrier") }
        var state = MonitorRepliesTests.state(1)
        state.links = many + [Self.link(2, "eth0", "degraded")]
        let requirements = [InterfaceRequirement(pattern: "veth*"), InterfaceRequirement(pattern: "eth0")]
        #expect(
            WaitOnline.waiting(state, requirements: requirements, minimum: .routable, any: false) == [
                "veth*: 35 of the 40 matching links, needs routable", "eth0: degraded, needs routable",
            ])
        state.links =
            many.map { Self.link($0.index, $0.name, $0.index < 14 ? "carrier" : "routable") } + [
                Self.link(2, "eth0", "routable")
            ]
        #expect(
            WaitOnline.waiting(state, requirements: requirements, minimum: .routable, any: false)
                == (0..<4).map { "veth\($0): carrier, needs routable" })
        state.links = state.links.map { Self.link($0.index, $0.name, "routable") }
        #expect(WaitOnline.waiting(state, requirements: requirements, minimum: .routable, any: false).isEmpty)
        #expect(
            WaitOnline.met(state, requirements: requirements, minimum: .routable)
                == "veth* (needs routable): 40 links; eth0 (needs routable): eth0 routable")
    }
}
