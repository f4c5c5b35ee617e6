import Foundation
import Testing
import Varlink

@Suite("Replies written out")
struct DrainedTests {
    @Test("a connection says each time it has written out every reply it had: a slow client's backlog once, when read")
    func backlog() throws {
        let server = try TestServer()
        // A 4 KiB receive buffer: most of 200 replies of about 1 KiB wait in the connection, the client reading none.
        let slow = ProtocolTests.subscribeReadingNothing(server)
        for n in 1...200 { server.tick(n) }
        usleep(100_000)
        // Those the socket took at once were each written out; the rest wait for the client.
        let before = server.drains.withLock { $0 }
        usleep(100_000)
        #expect(server.drains.withLock { $0 } == before, "nothing is said while replies wait for the client")
        let replies = slow.read(replies: 201)
        #expect(replies.count == 201)
        #expect(replies.last?.contains(#""n":200"#) == true)
        for _ in 0..<100 where server.drains.withLock({ $0 }) == before { usleep(10_000) }
        usleep(50_000)
        #expect(server.drains.withLock { $0 } == before + 1)
        // Small replies read as they come: each is written out at once.
        let client = RawConnection(server.path)
        for _ in 0..<20 {
            client.write(#"{"method":"org.example.test.Echo","parameters":{"text":"hello"}}"#)
            #expect(client.read(replies: 1).count == 1)
        }
        for _ in 0..<100 where server.drains.withLock({ $0 }) < before + 21 { usleep(10_000) }
        #expect(server.drains.withLock { $0 } == before + 21)
    }
}
