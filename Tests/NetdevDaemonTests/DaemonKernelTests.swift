import Foundation
import KernelTestSupport
import NetdevSession
import Testing

/// netdevd as a child process in the harness: NOTIFY_SOCKET bound by the test, logging to the private journald,
/// hooks from a directory of the test's.
final class RunningDaemon {
    let process = Process()
    let notify: NotifySocket
    let directory: String

    static var binary: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/netdevd").path
    }

    init(hook: String? = nil, extraArguments: [String] = []) throws {
        directory = NSTemporaryDirectory() + "netdevd-daemon-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: directory + "/netdevd.conf.d", withIntermediateDirectories: true)
        if let hook {
            let path = directory + "/hooks.d/50-record"
            try hook.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
        }
        notify = try NotifySocket()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments =
            [
                "--config", directory + "/netdevd.conf", "--hooks-dir", directory + "/hooks.d", "--log-target",
                "journal",
            ] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        process.environment = environment
        try process.run()
    }

    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for the exit; returns the status, or `nil` after `timeout` seconds.
    func exitStatus(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Journal entries whose `field` is `value`, polled until `condition` holds on them.
func journal(_ field: String, _ value: String, until condition: ([[String: Any]]) -> Bool) throws -> [[String: Any]] {
    var entries: [[String: Any]] = []
    _ = try waitUntil(timeout: 10) {
        entries = try jsonObjects(run("journalctl", "--no-pager", "-o", "json", "\(field)=\(value)"))
        return condition(entries)
    }
    return entries
}

@Suite("netdevd against the kernel", .serialized, .enabled(if: KernelHarness.isActive, KernelHarness.skipReason))
struct DaemonKernelTests {
    @Test(
        "READY=1 after enumeration with a STATUS line; links, addresses and states reach the journal; SIGTERM exits 0")
    func lifecycle() throws {
        let daemon = try RunningDaemon()
        let start = try #require(daemon.notify.receive(until: "READY=1"), "no READY=1 from netdevd")
        #expect(start.first == "STATUS=Enumerating links and devices…")
        let ready = try #require(start.last)
        #expect(ready.hasPrefix("READY=1\nSTATUS=") && ready.contains("links") && ready.contains("devices"))

        try ip("link", "add", "dmn0", "type", "veth", "peer", "name", "dmn1")
        defer { _ = try? ip("link", "del", "dmn0") }
        try ip("link", "set", "dmn1", "up")
        try ip("link", "set", "dmn0", "up")
        try ip("addr", "add", "192.0.2.77/24", "dev", "dmn0")
        let entries = try journal("NETDEVD_IFNAME", "dmn0") { entries in
            entries.contains { ($0["MESSAGE"] as? String)?.hasSuffix("→ routable") == true }
        }
        let routable = try #require(entries.first { ($0["MESSAGE"] as? String)?.hasSuffix("→ routable") == true })
        #expect(routable["MESSAGE_ID"] as? String == MessageKind.linkStateChanged.id)
        #expect(routable["NETDEVD_OPER_STATE"] as? String == "routable")
        #expect(routable["NETDEVD_PREV_OPER_STATE"] as? String == "carrier")
        #expect(routable["NETDEVD_IFINDEX"] as? String != nil)
        #expect(
            entries.contains {
                $0["MESSAGE_ID"] as? String == MessageKind.addressAdded.id
                    && $0["NETDEVD_ADDRESS"] as? String == "192.0.2.77/24"
            })

        daemon.signal(SIGTERM)
        #expect(daemon.notify.receive(until: "STOPPING=1") != nil)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1; a broken drop-in is logged with file and line")
    func reload() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        daemon.signal(SIGHUP)
        let reloading = try #require(daemon.notify.receive(until: "RELOADING=1"))
        #expect(reloading.last?.contains("MONOTONIC_USEC=") == true)
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let broken = daemon.directory + "/netdevd.conf.d/50-broken.conf"
        try "[Online]\nRequiredInterface=eth0\n".write(toFile: broken, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(daemon.notify.receive(until: "RELOADING=1") != nil)
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let failures = try journal("MESSAGE_ID", MessageKind.reloadFailed.id) { !$0.isEmpty }
        let failure = try #require(failures.last)
        #expect(failure["NETDEVD_CONFIG_FILE"] as? String == broken)
        #expect(failure["NETDEVD_CONFIG_LINE"] as? String == "2")
        #expect((failure["MESSAGE"] as? String)?.contains("did you mean 'RequiredInterfaces'?") == true)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("hooks run with the event, the subject and the documented environment")
    func hooks() throws {
        let output = NSTemporaryDirectory() + "netdevd-hook-output-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let daemon = try RunningDaemon(
            hook: """
                #!/bin/sh
                echo "$1 $2 $NETDEVD_EVENT $NETDEVD_IFNAME $NETDEVD_OPER_STATE $NETDEVD_PREV_OPER_STATE" >> \(output)
                echo "hook saw $1 $2"
                """)
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ip("link", "add", "hk0", "type", "veth", "peer", "name", "hk1")
        defer { _ = try? ip("link", "del", "hk0") }
        _ = waitUntil {
            (try? String(contentsOfFile: output, encoding: .utf8))?.contains("link-added hk0 link-added hk0") == true
        }
        let lines = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(lines.contains("link-added hk0 link-added hk0 off"))
        let hookOutput = try journal("SYSLOG_IDENTIFIER", "50-record") { !$0.isEmpty }
        #expect(hookOutput.contains { ($0["MESSAGE"] as? String)?.hasPrefix("hook saw") == true })
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}
