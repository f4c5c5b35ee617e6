import Foundation
import KernelTestSupport
import Testing
import Varlink

@Suite("netdevd's memory after a burst with monitors", .serialized, .tags(.kernel), KernelHarness.enabled)
struct MonitoredBurstMemoryTests {
    @Test("10 monitors, 2,000 veth pairs made and deleted: 9 s later the heap has given back all but 1 MiB of it")
    func memoryBackAfterMonitoredBurst() throws {
        // glibc as netdevd.service sets it (one freed block of each size kept per thread).
        let daemon = try RunningDaemon(environment: ["GLIBC_TUNABLES": "glibc.malloc.tcache_count=1"])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let pid = daemon.process.processIdentifier
        let readers = DispatchGroup()
        let monitors = (0..<10).map { _ in RawMonitor(path: daemon.socket) }
        defer {
            // A shutdown wakes the reading threads (a close alone leaves a blocked recv waiting for the daemon).
            for monitor in monitors {
                shutdown(monitor.fd, Int32(SHUT_RDWR))
                close(monitor.fd)
            }
            readers.wait()
        }
        for monitor in monitors { monitor.readUntilClosed(readers) }
        #expect(waitUntil { monitors.allSatisfy { $0.text.contains("\"state\"") } }, "a monitor had no first state")
        Thread.sleep(forTimeInterval: 2)
        let before = try #require(heapResidentKiB(pid))
        let made = Result { try ipBatch((0..<2_000).map { "link add mbm\($0)a type veth peer name mbm\($0)b" }) }
        defer { _ = try? ipBatch((0..<2_000).map { "link del mbm\($0)a" }) }
        try made.get()
        try ipBatch((0..<2_000).map { "link set mbm\($0)a up" })
        try ipBatch((0..<2_000).map { "link del mbm\($0)a" })
        let listed = waitUntil(timeout: 120) {
            let links = try? VarlinkClient(path: daemon.socket).call("io.netdevd.ListLinks")["links"]
            guard case .array(let links)? = links else { return false }
            return links.count == 1
        }
        #expect(listed, "the 4,000 links were not all removed")
        // The heap is trimmed a quiet second after the burst and the last reply (the ListLinks above), and again
        // 6 s later, once libdispatch's threads that sent the monitors their changes and answered the calls have
        // ended and freed the blocks they kept, one on each of hundreds of the burst's pages. Measured (debug
        // build): 532-540 KiB above before 9 s after, 136-300 KiB less than 3 s after; without the second trim,
        // 864 above and 64 more than 3 s after.
        Thread.sleep(forTimeInterval: 3)
        let firstTrim = try #require(heapResidentKiB(pid))
        Thread.sleep(forTimeInterval: 6)
        let after = try #require(heapResidentKiB(pid))
        #expect(
            after - before < 1_024 && after < firstTrim,
            "the heap \(before) KiB resident before the burst, \(firstTrim) KiB 3 s after, \(after) KiB 9 s after")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
    }
}
