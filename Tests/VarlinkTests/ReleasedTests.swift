import Foundation
import KernelTestSupport
import Testing
import Varlink

@Suite("Replies let go")
struct ReleasedTests {
    @Test("a connection that wrote a MiB of replies and has nothing left to write says so once; less says nothing")
    func releasedOnce() throws {
        let server = try TestServer()
        let monitor = RawConnection(server.path)
        let fd = monitor.fd
        monitor.write(#"{"method":"org.example.test.Ticks","more":true}"#)
        #expect(waitFor { !server.ticks.all.isEmpty })
        // Read as they come, in the background, until the server closes.
        let read = Protected(0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while case let count = recv(fd, &chunk, chunk.count, 0), count > 0 {
                read.withLock { $0 += count }
            }
            done.signal()
        }
        // Each tick is about 1,050 bytes: 500 are half a MiB.
        for n in 1...500 { server.tick(n) }
        #expect(waitFor { read.withLock { $0 } >= 500 * 1_000 })
        usleep(100_000)
        #expect(server.released.withLock { $0 } == 0)
        for n in 501...1_500 { server.tick(n) }
        #expect(waitFor { read.withLock { $0 } >= 1_500 * 1_000 })
        #expect(waitFor { server.released.withLock { $0 } == 1 })
        usleep(100_000)
        #expect(server.released.withLock { $0 } == 1, "a MiB more was not let go")
        server.server.stop()
        done.wait()
    }

    /// Whether `condition` held within 5 s.
    func waitFor(_ condition: () -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
