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
