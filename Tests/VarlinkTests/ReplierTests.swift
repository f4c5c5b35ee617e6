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
}
