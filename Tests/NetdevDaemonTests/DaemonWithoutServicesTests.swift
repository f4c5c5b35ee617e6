import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

@Suite("netdevd without journald or udevd", .serialized, .tags(.kernel), KernelHarness.enabled)
struct DaemonWithoutServicesTests {
    @Test(
        "no journald socket: it logs <N>-prefixed lines to standard error; no udevd: auto picks the kernel source and says so"
    )
    func consoleAndKernelSource() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        // A private mount namespace with /run/systemd/journal and /run/udev hidden: no journal, no udevd.
        process.arguments = [
            "--mount", "--propagation", "private", "sh", "-c",
            "mount -t tmpfs tmpfs /run/systemd/journal && mount -t tmpfs tmpfs /run/udev && exec \"$0\" --config /nonexistent.conf --hooks-dir /nonexistent",
            RunningDaemon.binary,
        ]
        let errors = Pipe()
        process.standardError = errors
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = nil
        process.environment = environment
        try process.run()
        usleep(1_500_000)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0)
        #expect(output.contains("<6>Monitoring udev source 'kernel' (auto: udevd is not running"), "\(output)")
        #expect(output.contains("<5>netdevd started:"), "\(output)")
        #expect(output.contains("<5>netdevd stopped"), "\(output)")
    }
}
