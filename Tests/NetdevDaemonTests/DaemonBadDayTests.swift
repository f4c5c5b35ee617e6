import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

@Suite("netdevd on bad days", .serialized, .tags(.kernel), KernelHarness.enabled)
struct DaemonBadDayTests {
    @Test("WATCHDOG_USEC set: WATCHDOG=1 about every half interval; with the loop queue blocked, the pings stop")
    func watchdog() throws {
        let daemon = try RunningDaemon(environment: [
            "WATCHDOG_USEC": "400000", "NETDEVD_TEST_BLOCK_LOOP_ON_SIGUSR1": "1",
        ])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        // Pings come again and again (how often is a benchmark's business, not a timed assertion's).
        for ping in 1...3 {
            #expect(daemon.notify.receive(until: "WATCHDOG=1", timeout: 5) != nil, "ping \(ping) of 3 did not come")
        }
        // With the loop queue blocked (3 s), the pings stop: a gap of a second, five times the ping interval,
        // must appear; while the loop runs, there is none.
        daemon.signal(SIGUSR1)
        var gapSeen = false
        let blocked = Date()
        while !gapSeen && Date().timeIntervalSince(blocked) < 5 {
            gapSeen = daemon.notify.receive(until: "WATCHDOG=1", timeout: 1.0) == nil
        }
        #expect(gapSeen, "the pings went on with the loop queue blocked")
        #expect(daemon.notify.receive(until: "WATCHDOG=1", timeout: 3) != nil, "pings resume once the loop runs")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("NOTIFY_SOCKET pointing at nothing: one warning, no crash, a clean stop")
    func notifySocketMissing() throws {
        let marker = "/run/netdevd-test-nowhere-\(UInt32.random(in: 0...UInt32.max)).sock"
        let daemon = try RunningDaemon(environment: ["NOTIFY_SOCKET": marker])
        let warnings = try journal(of: daemon, "SYSLOG_IDENTIFIER", "netdevd") { entries in
            entries.contains {
                ($0["MESSAGE"] as? String)?.contains("further notification failures are not logged") == true
            }
        }
        #expect(!warnings.isEmpty)
        // Every notification after it fails too (the links' STATUS, STOPPING=1): still one warning, at the end.
        try ip("link", "add", "nsk0", "type", "veth", "peer", "name", "nsk1")
        try ip("link", "del", "nsk0")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
        let all = try journal(of: daemon, "SYSLOG_IDENTIFIER", "netdevd") { entries in
            entries.contains { ($0["MESSAGE"] as? String) == "netdevd stopped" }
        }
        #expect(all.contains { ($0["MESSAGE"] as? String) == "netdevd stopped" })
        #expect(all.filter { ($0["MESSAGE"] as? String)?.contains("notification failures") == true }.count == 1)
    }

    @Test("a hook that ignores SIGTERM is killed after the grace period; its status and duration are logged")
    func stubbornHook() throws {
        let daemon = try RunningDaemon(
            hook: "#!/bin/sh\ntrap '' TERM\nsleep 30\n",
            configuration: "[Hooks]\nTimeoutSec=300ms\n",
            extraArguments: ["--hook-kill-grace", "500"]
        )
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let started = Date()
        try ip("link", "add", "stb0", "type", "veth", "peer", "name", "stb1")
        defer { _ = try? ip("link", "del", "stb0") }
        let failed = try journal(of: daemon, "MESSAGE_ID", MessageKind.hookRunFailed.id) { !$0.isEmpty }
        let message = failed.first?["MESSAGE"] as? String ?? ""
        #expect(message.contains("50-record: timed out"), "\(message)")
        #expect(Date().timeIntervalSince(started) < 10)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
    }

    @Test("TimeoutSec=0 means no limit: a hook that takes its time finishes and is not killed")
    func noHookTimeout() throws {
        let daemon = try RunningDaemon(
            hook: "#!/bin/sh\nsleep 0.6\n", configuration: "[Hooks]\nTimeoutSec=0\n",
            extraArguments: ["--log-level", "debug"])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ip("link", "add", "nto0", "type", "veth", "peer", "name", "nto1")
        defer { _ = try? ip("link", "del", "nto0") }
        let finished = try journal(of: daemon, "MESSAGE_ID", MessageKind.hookRunFinished.id) { !$0.isEmpty }
        #expect(!finished.isEmpty, "the hook run did not finish")
        let failed = try run(
            "journalctl", "--no-pager", "-o", "cat", "MESSAGE_ID=\(MessageKind.hookRunFailed.id)",
            "_PID=\(daemon.process.processIdentifier)")
        #expect(failed.isEmpty, "\(failed)")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
    }

    @Test("a hook that prints 50 MB does not grow the daemon's memory")
    func noisyHook() throws {
        let daemon = try RunningDaemon(hook: "#!/bin/sh\nyes x | head -c 50000000\necho done\n")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let before = try #require(peakMemoryKiB(daemon.process.processIdentifier))
        try ip("link", "add", "nsy0", "type", "veth", "peer", "name", "nsy1")
        defer { _ = try? ip("link", "del", "nsy0") }
        let output = try journal(of: daemon, "SYSLOG_IDENTIFIER", "50-record") { !$0.isEmpty }
        let tail = try #require(output.first?["MESSAGE"] as? String)
        #expect(tail.hasSuffix("x\ndone"))
        // The last 4 KiB, after one line that says how much came before them.
        let lines = tail.split(separator: "\n", maxSplits: 1)
        #expect(
            lines.first
                == "[netdevd kept the last 4096 bytes of this output; the 49995909 bytes before them were dropped]")
        #expect((lines.last?.utf8.count ?? 0) <= 4096)
        let after = try #require(peakMemoryKiB(daemon.process.processIdentifier))
        #expect(after - before < 10_000, "peak memory grew from \(before) KiB to \(after) KiB")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
    }

    @Test("4,000 links made, metrics read, the links deleted: each time the anonymous memory is back to where it was")
    func metricsReadLeavesNothing() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let pid = daemon.process.processIdentifier
        func linkCount() throws -> Int {
            let reply = try VarlinkClient(path: daemon.socket).call("io.netdevd.ListLinks")
            guard case .array(let links)? = reply["links"] else { return -1 }
            return links.count
        }
        let idleLinks = try linkCount()
        Thread.sleep(forTimeInterval: 1)
        let before = try #require(anonymousMemoryKiB(pid))
        let made = Result { try ipBatch((0..<2_000).map { "link add mlk\($0)a type veth peer name mlk\($0)b" }) }
        defer { _ = try? ipBatch((0..<2_000).map { "link del mlk\($0)a" }) }
        try made.get()
        #expect(try waitUntil(timeout: 60) { try linkCount() == idleLinks + 4_000 }, "the 4,000 links were not listed")
        let beforeMetrics = try #require(anonymousMemoryKiB(pid))
        let text = try VarlinkClient(path: daemon.socket).call("io.netdevd.GetMetrics")["text"]?.stringValue ?? ""
        #expect(text.contains(#"netdevd_link_carrier{link="mlk1999b"}"#))
        // The text and its reply (2.4 MB or more each) are given back at once, not kept in the heap for the next burst.
        // What grows is the render's small pieces, freed and not yet trimmed: 1,024 and 1,108 KiB in this debug build
        // (2026-11-29), so the bound sits above them and below either buffer.
        let afterMetrics = try #require(anonymousMemoryKiB(pid))
        #expect(
            afterMetrics - beforeMetrics < 1_536,
            "anonymous memory \(beforeMetrics) KiB before GetMetrics, \(afterMetrics) KiB after")
        try ipBatch((0..<2_000).map { "link del mlk\($0)a" })
        #expect(try waitUntil(timeout: 60) { try linkCount() == idleLinks }, "the 4,000 links were not all removed")
        // The memory of the burst is given back after a second without events. What stays is the heap's pieces spread
        // over its pages: 1,444-1,600 KiB in this debug build over 10 runs (2026-11-28); with the trim taken out,
        // 4,252 KiB.
        Thread.sleep(forTimeInterval: 3)
        let after = try #require(anonymousMemoryKiB(pid))
        #expect(after - before < 2_048, "anonymous memory \(before) KiB before, \(after) KiB after")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
    }

    @Test(
        "500 veth pairs into a small receive buffer: the resync is logged and the recorded session replays to the kernel's links"
    )
    func overflowAndReplay() throws {
        let record = NSTemporaryDirectory() + "netdevd-record-\(UInt32.random(in: 0...UInt32.max)).jsonl"
        defer { try? FileManager.default.removeItem(atPath: record) }
        let daemon = try RunningDaemon(extraArguments: ["--receive-buffer", "8192", "--record", record])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        // Stopped while the kernel announces 1,000 links, netdevd cannot keep up however fast it is: the 8 KiB
        // buffer overflows for certain, not only on a slow machine.
        daemon.signal(SIGSTOP)
        let made = Result { try ipBatch((0..<500).map { "link add burst\($0)a type veth peer name burst\($0)b" }) }
        daemon.signal(SIGCONT)
        defer { _ = try? ipBatch((0..<500).map { "link del burst\($0)a" }) }
        try made.get()
        let resynced = try journal(of: daemon, "MESSAGE_ID", MessageKind.resynced.id) { !$0.isEmpty }
        #expect(!resynced.isEmpty, "no resync was logged")
        let kernel = try jsonObjects(ip("-j", "link", "show")).compactMap { $0["ifname"] as? String }.sorted()
        // With an 8 KiB buffer, trailing uevents can overflow it again after the first resync: wait until netdevd
        // has converged on the kernel's links (running, every link), however many resyncs that takes.
        let converged = try waitUntil(timeout: 30) {
            let client = try VarlinkClient(path: daemon.socket)
            let state = try client.call("io.netdevd.GetState")["state"]
            guard state?["phase"]?.stringValue == "running", case .array(let links)? = state?["links"] else {
                return false
            }
            return links.compactMap { $0["name"]?.stringValue }.sorted() == kernel
        }
        #expect(converged, "netdevd did not converge on the kernel's \(kernel.count) links within 30 s")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
        let recording = try Recording(contentsOf: record)
        let start = Session.initiate(Model(configuration: recording.configuration ?? Configuration())).model
        let steps = Session.replay(events: recording.events, from: start)
        let beforeStop = try #require(steps.last { $0.model.phase == .running })
        #expect(beforeStop.model.links.values.map(\.name).sorted() == kernel)
    }
}
