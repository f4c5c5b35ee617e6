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

    @Test(
        "replies framed once reach every monitor as the same buffer; one that had the first two gets the rest; a call without more gets the first as its last"
    )
    func framedOnce() {
        let messages = Protected<[String: [([UInt8], Bool)]]>([:])
        func replier(_ name: String, more: Bool = true) -> VarlinkReplier {
            VarlinkReplier(call: VarlinkCall(method: "io.netdevd.Monitor", more: more)) { _, message, continues in
                messages.withLock { $0[name, default: []].append((message, continues)) }
            }
        }
        let parameters = (1...4).map { Array(#"{"n":\#($0)}"#.utf8) }
        var replies = ContinuingReplies()
        for each in parameters { replies.append { $0 += each } }
        let frames = parameters.map { Array(#"{"continues":true,"parameters":"#.utf8) + $0 + Array("}".utf8) + [0] }
        #expect(replies.count == 4)
        #expect(replies.message == frames.flatMap { $0 })
        #expect(ContinuingReplies(encodedParameters: parameters).message == replies.message)

        for name in ["a", "b"] { replier(name).reply(continuingWith: replies) }
        replier("rest").reply(continuingWith: replies.dropFirst(2))
        replier("none").reply(continuingWith: replies.dropFirst(4))
        replier("once", more: false).reply(continuingWith: replies)
        let finished = replier("finished")
        finished.reply(encodedParameters: parameters[0])
        finished.reply(continuingWith: replies)

        let sent = messages.withLock { $0 }
        let a = sent["a"]?.first?.0 ?? []
        let b = sent["b"]?.first?.0 ?? []
        #expect(a == replies.message && sent["a"]?.count == 1 && sent["a"]?.first?.1 == true)
        #expect(
            a.withUnsafeBufferPointer { $0.baseAddress } == b.withUnsafeBufferPointer { $0.baseAddress },
            "each monitor got a copy")
        #expect(sent["rest"]?.map(\.0) == [frames[2] + frames[3]])
        #expect(replies.dropFirst(2).dropFirst(1).message == frames[3])
        #expect(sent["none"] == nil)
        #expect(sent["once"]?.map(\.0) == [Array(#"{"parameters":{"n":1}}"#.utf8) + [0]])
        #expect(sent["once"]?.first?.1 == false)
        #expect(sent["finished"]?.count == 1, "replies after the last were sent")
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
