import KernelTestSupport
import Testing

@testable import Varlink

@Suite("A replier's state")
struct ReplierTests {
    @Test("a monitor's replier answers 500,000 changes and still runs its cancel handler (no chain of thunks)")
    func manyReplies() {
        let replies = Protected(0)
        let replier = VarlinkReplier(call: VarlinkCall(method: "io.netdevd.Monitor", more: true)) { _, _, _ in
            replies.withLock { $0 += 1 }
        }
        let cancelled = Protected(0)
        replier.onCancel { cancelled.withLock { $0 += 1 } }
        // Each reply locks the replier's state; were the handler kept where every lock re-wraps it, calling it now
        // would recurse through a million thunks and overflow the stack (as it did, with 120 bytes kept per reply).
        for _ in 0..<500_000 {
            replier.reply(encodedParameters: Array("{}".utf8), continues: true)
            _ = replier.isCancelled
        }
        replier.cancel()
        #expect(replies.withLock { $0 } == 500_000)
        #expect(cancelled.withLock { $0 } == 1)
        #expect(replier.isCancelled)
    }

    @Test("a reply whose parameters are written into its message is framed as one encoded first, and is the last")
    func writtenParameters() {
        let messages = Protected<[([UInt8], Bool)]>([])
        let deliver: @Sendable (VarlinkReplier, [UInt8], Bool) -> Void = { _, message, continues in
            messages.withLock { $0.append((message, continues)) }
        }
        let parameters = Array(#"{"text":"a\nb"}"#.utf8)
        VarlinkReplier(call: VarlinkCall(method: "io.netdevd.GetMetrics"), deliver: deliver)
            .reply(encodedParameters: parameters)
        let written = VarlinkReplier(call: VarlinkCall(method: "io.netdevd.GetMetrics"), deliver: deliver)
        written.reply(writingParameters: { $0 += parameters })
        written.reply(writingParameters: { $0 += parameters })
        let sent = messages.withLock { $0 }
        #expect(sent.count == 2, "a second reply after the last was sent")
        #expect(sent.first?.0 == Array(#"{"parameters":{"text":"a\nb"}}"#.utf8) + [0])
        #expect(sent.last?.0 == sent.first?.0 && sent.last?.1 == false)
    }
}

@Suite("Method signatures read from an interface description")
struct MethodSignatureTests {
    @Test("declarations over several lines, comments, inline enums, maps and optionals are read as declared")
    func parse() {
        let signatures = MethodSignature.parse(
            """
            interface org.example.test
            # A comment with a method Fake(x: int) -> () in it.
            type Mode (one, two)
            method Plain() -> ()
            method Spread(
              # a comment inside
              name: string,
              mode: (fast, slow),
              named: Mode,
              labels: ?[string]string,
              counts: []int
            ) -> (done: bool)
            """)
        #expect(Set(signatures.keys) == ["Plain", "Spread"])
        let spread = signatures["Spread"]
        #expect(spread?.parameters.map(\.name) == ["name", "mode", "named", "labels", "counts"])
        let good: [String: JSONValue] = [
            "name": .string("a"), "mode": .string("slow"), "named": .string("two"),
            "labels": .object(["k": .string("v")]),
            "counts": .array([.number(1), .number(2)]),
        ]
        #expect(spread?.invalidParameter(in: good) == nil)
        var wrong = good
        wrong["mode"] = .string("medium")
        #expect(spread?.invalidParameter(in: wrong) == "mode")
        wrong = good
        wrong["counts"] = .array([.number(1.5)])
        #expect(spread?.invalidParameter(in: wrong) == "counts")
        wrong = good
        wrong["labels"] = nil
        #expect(spread?.invalidParameter(in: wrong) == nil, "an optional may be absent")
        wrong["name"] = nil
        #expect(spread?.invalidParameter(in: wrong) == "name", "a required one may not")
        #expect(signatures["Plain"]?.invalidParameter(in: ["x": .null]) == "x")
    }
}
