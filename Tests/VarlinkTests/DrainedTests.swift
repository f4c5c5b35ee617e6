import Foundation
import Testing
import Varlink

@Suite("Backlogs written out")
struct DrainedTests {
    @Test("a slow client's backlog of replies, once all written, is said once; replies taken at once are not")
    func backlog() throws {
        let server = try TestServer()
        // A 4 KiB receive buffer: 200 replies of about 1 KiB wait in the connection while the client reads nothing.
        let slow = ProtocolTests.subscribeReadingNothing(server)
        for n in 1...200 { server.tick(n) }
        usleep(100_000)
        #expect(server.drains.withLock { $0 } == 0, "nothing is written out before the client reads")
        let replies = slow.read(replies: 201)
        #expect(replies.count == 201)
        #expect(replies.last?.contains(#""n":200"#) == true)
        for _ in 0..<100 where server.drains.withLock({ $0 }) == 0 { usleep(10_000) }
        #expect(server.drains.withLock { $0 } == 1)
        // Small replies read as they come hold no backlog.
        let client = RawConnection(server.path)
        for _ in 0..<20 {
            client.write(#"{"method":"org.example.test.Echo","parameters":{"text":"hello"}}"#)
            #expect(client.read(replies: 1).count == 1)
        }
        usleep(100_000)
        #expect(server.drains.withLock { $0 } == 1)
    }
}
