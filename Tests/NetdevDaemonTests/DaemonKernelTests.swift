import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

/// netdevd as a child process in the harness: NOTIFY_SOCKET bound by the test, logging to the private journald,
/// hooks from a directory of the test's.
final class RunningDaemon {
    let process = Process()
    let notify: NotifySocket
    let directory: String

    static var binary: String { built("netdevd") }

    /// The path of an executable `swift build` made.
    static func built(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/\(name)").path
    }

    var socket: String { directory + "/io.netdevd" }

    init(
        hook: String? = nil,
        configuration: String? = nil,
        extraArguments: [String] = [],
        environment extra: [String: String] = [:]
    ) throws {
        directory = NSTemporaryDirectory() + "netdevd-daemon-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: directory + "/netdevd.conf.d", withIntermediateDirectories: true)
        if let hook {
            let path = directory + "/hooks.d/50-record"
            try hook.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
        }
        if let configuration {
            try configuration.write(toFile: directory + "/netdevd.conf", atomically: true, encoding: .utf8)
        }
        notify = try NotifySocket()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments =
            [
                "--config", directory + "/netdevd.conf", "--hooks-dir", directory + "/hooks.d",
                "--log-target", "journal", "--socket", directory + "/io.netdevd",
            ] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        environment.merge(extra) { _, new in new }
        process.environment = environment
        try process.run()
    }

    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for the exit, reading notifications meanwhile as systemd would; returns the status, or `nil` after
    /// `timeout` seconds.
    func exitStatus(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { _ = notify.receive(timeout: 0.01) }
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

/// Journal entries of `daemon` whose `field` is `value`, polled until `condition` holds on them.
func journal(
    of daemon: RunningDaemon,
    _ field: String,
    _ value: String,
    until condition: ([[String: Any]]) -> Bool
) throws -> [[String: Any]] {
    var entries: [[String: Any]] = []
    let pid = "_PID=\(daemon.process.processIdentifier)"
    _ = try waitUntil(timeout: 10) {
        entries = try jsonObjects(run("journalctl", "--no-pager", "--all", "-o", "json", "\(field)=\(value)", pid))
        return condition(entries)
    }
    return entries
}

@Suite("netdevd against the kernel", .serialized, .tags(.kernel), KernelHarness.enabled)
struct DaemonKernelTests {
    @Test(
        "READY=1 after enumeration with a STATUS line; links, addresses and states reach the journal; SIGTERM exits 0")
    func lifecycle() throws {
        let daemon = try RunningDaemon()
        let start = try #require(daemon.notify.receive(until: "READY=1"), "no READY=1 from netdevd")
        #expect(start.first == "STATUS=Enumerating links and devices…")
        let ready = try #require(start.last)
        // Counted as a person writes them: "1 link", "2 links" (the namespace has lo and its devices).
        #expect(
            ready.range(of: #"^READY=1\nSTATUS=1 link \(0 routable\), \d+ devices?; "#, options: .regularExpression)
                != nil,
            "\(ready)")

        try ip("link", "add", "dmn0", "type", "veth", "peer", "name", "dmn1")
        defer { _ = try? ip("link", "del", "dmn0") }
        try ip("link", "set", "dmn1", "up")
        try ip("link", "set", "dmn0", "up")
        try ip("addr", "add", "192.0.2.77/24", "dev", "dmn0")
        let entries = try journal(of: daemon, "NETDEVD_IFNAME", "dmn0") { entries in
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
        // The last entry is written before the process ends, not lost in a queue.
        let stopped = try journal(of: daemon, "MESSAGE_ID", MessageKind.stopped.id) { !$0.isEmpty }
        #expect(stopped.count == 1, "no 'netdevd stopped' entry in the journal")
    }

    @Test("SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1; a misspelt key is a warning with file and line")
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
        let warnings = try journal(of: daemon, "MESSAGE_ID", MessageKind.configurationWarning.id) { !$0.isEmpty }
        let warning = try #require(warnings.last)
        #expect(warning["NETDEVD_CONFIG_FILE"] as? String == broken)
        #expect(warning["NETDEVD_CONFIG_LINE"] as? String == "2")
        #expect((warning["MESSAGE"] as? String)?.contains("did you mean 'RequiredInterfaces'?") == true)
        // The rest of the reload was taken: no failure.
        let reloaded = try journal(of: daemon, "MESSAGE_ID", MessageKind.reloaded.id) { $0.count >= 2 }
        #expect(reloaded.count == 2)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("a misspelt key at start: netdevd runs (READY=1) and says it once, with file, line and the key meant")
    func typoAtStart() throws {
        let daemon = try RunningDaemon(configuration: "[Online]\nRequiredInterface=eth0\n")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let said = try journal(of: daemon, "SYSLOG_IDENTIFIER", "netdevd") { entries in
            entries.contains { ($0["MESSAGE"] as? String)?.hasPrefix("netdevd started") == true }
        }
        let warnings = said.compactMap { $0["MESSAGE"] as? String }.filter { $0.contains("RequiredInterface") }
        #expect(
            warnings == [
                "\(daemon.directory)/netdevd.conf:2: unknown key 'RequiredInterface' in [Online], did you mean "
                    + "'RequiredInterfaces'?; the line is ignored"
            ])
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
        let hookOutput = try journal(of: daemon, "SYSLOG_IDENTIFIER", "50-record") { !$0.isEmpty }
        #expect(hookOutput.contains { ($0["MESSAGE"] as? String)?.hasPrefix("hook saw") == true })
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("a renamed interface: its device moves to the new path, the journal says renamed, hooks get device-moved")
    func rename() throws {
        let output = NSTemporaryDirectory() + "netdevd-rename-output-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let daemon = try RunningDaemon(
            hook: """
                #!/bin/sh
                case "$1" in device-*) echo "$1 $2 ${NETDEVD_PREV_DEVPATH:--}" >> \(output) ;; esac
                """)
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ip("link", "add", "rn0", "type", "veth", "peer", "name", "rn1")
        defer { _ = try? ip("link", "del", "rn2") }
        defer { _ = try? ip("link", "del", "rn0") }
        let socket = ["--socket", daemon.socket]
        let old = "/sys/devices/virtual/net/rn0"
        let new = "/sys/devices/virtual/net/rn2"
        _ = waitUntil { (try? netdevctl(["device", "rn0"] + socket))?.status == 0 }
        try ip("link", "set", "rn0", "name", "rn2")
        let moved = "device-moved \(new) \(old)"
        _ = waitUntil { (try? String(contentsOfFile: output, encoding: .utf8))?.contains(moved) == true }
        let lines = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(lines.contains("device-added \(old) -\n"), "\(lines)")
        #expect(lines.contains(moved + "\n"), "\(lines)")
        #expect(!lines.contains("device-removed"), "\(lines)")
        let devices = try netdevctl(["devices", "--subsystem", "net", "--no-legend"] + socket).output
        #expect(devices.contains("net rn2 "), "\(devices)")
        #expect(!devices.contains("net rn0 "), "a phantom device under the old name: \(devices)")
        #expect(try netdevctl(["device", "rn0"] + socket).status != 0)
        #expect(try netdevctl(["device", "rn2"] + socket).output.contains("Path: \(new)"))
        let renamed = try journal(of: daemon, "MESSAGE_ID", MessageKind.linkRenamed.id) { !$0.isEmpty }
        #expect(renamed.first?["MESSAGE"] as? String == "rn0: renamed to rn2")
        #expect(renamed.first?["NETDEVD_PREV_IFNAME"] as? String == "rn0")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}

/// The daemon's peak resident memory in KiB (VmHWM).
func peakMemoryKiB(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
    return line?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
}

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

    @Test(
        "500 veth pairs into a small receive buffer: the resync is logged and the recorded session replays to the kernel's links"
    )
    func overflowAndReplay() throws {
        let record = NSTemporaryDirectory() + "netdevd-record-\(UInt32.random(in: 0...UInt32.max)).jsonl"
        defer { try? FileManager.default.removeItem(atPath: record) }
        let daemon = try RunningDaemon(extraArguments: ["--receive-buffer", "8192", "--record", record])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ipBatch((0..<500).map { "link add burst\($0)a type veth peer name burst\($0)b" })
        defer { _ = try? ipBatch((0..<500).map { "link del burst\($0)a" }) }
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

@Suite("netdevd --replay", .serialized, .tags(.kernel), KernelHarness.enabled)
struct ReplayKernelTests {
    @Test("a recorded burst replays offline: the journal entries are the live ones, the final state the kernel's")
    func replayMatchesLive() throws {
        let record = NSTemporaryDirectory() + "netdevd-replay-\(UInt32.random(in: 0...UInt32.max)).jsonl"
        defer { try? FileManager.default.removeItem(atPath: record) }
        let daemon = try RunningDaemon(hook: "#!/bin/sh\nexit 0\n", extraArguments: ["--record", record])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ipBatch(
            (0..<20).flatMap { number in
                [
                    "link add rp\(number)a type veth peer name rp\(number)b", "link set rp\(number)a up",
                    "link set rp\(number)b up", "address add 198.18.\(number).1/24 dev rp\(number)a",
                ]
            } + (0..<5).map { "link del rp\($0)a" })
        defer { _ = try? ipBatch((5..<20).map { "link del rp\($0)a" }) }
        // Settled: the same state for a second (udev's events trail the links), and no address of the kernel's still
        // tentative (a link-local address is reported once its duplicate detection is over, which can take longer
        // than that second: CI once compared while 28 of them were still tentative).
        let state = {
            try? VarlinkClient(path: daemon.socket).call("io.netdevd.GetState")["state"]?.decode(as: StateReport.self)
        }
        let tentative = {
            (try? jsonObjects(ip("-j", "address", "show")))?.contains { link in
                ((link["addr_info"] as? [[String: Any]]) ?? []).contains { $0["tentative"] as? Bool == true }
            } ?? true
        }
        var last = state()
        _ = waitUntil(timeout: 30) {
            usleep(1_000_000)
            let now = state()
            defer { last = now }
            return now != nil && now == last && !tentative()
        }
        let (kernelLinks, kernelAddresses) = try kernelLinksAndAddresses()
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)

        let replayed = try run([RunningDaemon.binary, "--replay", record, "--json"])
        #expect(try run([RunningDaemon.binary, "--replay", record, "--json"]) == replayed, "not the same twice")
        let lines = try jsonObjects(replayed)
        let final = try #require(lines.last?["state"] as? [String: Any])
        let links = (final["links"] as? [[String: Any]]) ?? []
        #expect(
            links.map { "\($0["index"] as? Int ?? 0) \($0["name"] as? String ?? "") \($0["mtu"] as? Int ?? 0)" }
                .sorted()
                == kernelLinks)
        #expect(
            links.flatMap { link in
                ((link["addresses"] as? [String]) ?? []).map { "\(link["index"] as? Int ?? 0) \($0)" }
            }.sorted() == kernelAddresses)
        #expect(lines.contains { ($0["hooks"] as? [String: Any])?["event"] as? String == "link-added" })

        // Every entry the session logged, in order, against what netdevd wrote to the journal.
        let replayedEntries = lines.compactMap { $0["journal"] as? [String: Any] }.map {
            "\($0["messageID"] as? String ?? "") \($0["message"] as? String ?? "")"
        }
        var liveEntries: [String] = []
        _ = try waitUntil(timeout: 10) {
            liveEntries = try jsonObjects(
                run(
                    "journalctl", "--no-pager", "--all", "-o", "json",
                    "_PID=\(daemon.process.processIdentifier)")
            ).compactMap { entry in
                (entry["MESSAGE_ID"] as? String).map { "\($0) \(entry["MESSAGE"] as? String ?? "")" }
            }
            return liveEntries.count >= replayedEntries.count
        }
        #expect(replayedEntries.count > 40)
        #expect(liveEntries == replayedEntries)
        let text = try run([RunningDaemon.binary, "--replay", record])
        #expect(text.contains(" hooks   link-added rp0a (run "), "\(text.prefix(2000))")
        #expect(text.contains(" journal info    rp0a: removed\n"), "\(text.prefix(2000))")
    }

    @Test("a broken recording is refused with its file and line, exit 1")
    func brokenRecording() throws {
        let record = NSTemporaryDirectory() + "netdevd-replay-broken-\(UInt32.random(in: 0...UInt32.max)).jsonl"
        defer { try? FileManager.default.removeItem(atPath: record) }
        try "{\"watchdogTick\":{}}\nnot json\n".write(toFile: record, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: RunningDaemon.binary)
        process.arguments = ["--replay", record]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(message.hasPrefix("netdevd: cannot replay \(record):2: not an event netdevd recorded (invalid JSON"))
    }
}

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

extension DaemonBadDayTests {
    @Test("a hook run made stale by newer state of the same link is dropped and logged, not run")
    func staleRunDropped() throws {
        let daemon = try RunningDaemon(hook: "#!/bin/sh\nsleep 1\n")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ip("link", "add", "stl0", "type", "veth", "peer", "name", "stl1")
        defer { _ = try? ip("link", "del", "stl0") }
        for _ in 0..<3 {
            try ip("link", "set", "stl0", "up")
            try ip("link", "set", "stl0", "down")
        }
        usleep(300_000)
        // The count is logged 10 s after the first drop, or at the stop: stop now.
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
        let dropped = try journal(of: daemon, "MESSAGE_ID", MessageKind.hookRunDropped.id) { !$0.isEmpty }
        let count = try #require(dropped.first?["NETDEVD_HOOK_RUNS_DROPPED"] as? String)
        #expect((Int(count) ?? 0) >= 1, "\(dropped)")
    }
}

extension DaemonWithoutServicesTests {
    @Test("without root it still starts and watches (no big receive buffers, no control socket in /run), and says so")
    func unprivileged() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", RunningDaemon.binary, "--log-target", "console",
            "--config", "/nonexistent.conf", "--hooks-dir", "/nonexistent",
        ]
        let errors = Pipe()
        process.standardError = errors
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = nil
        process.environment = environment
        try process.run()
        usleep(1_500_000)
        try ip("link", "add", "unp0", "type", "veth", "peer", "name", "unp1")
        try ip("link", "del", "unp0")
        usleep(300_000)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.contains("netdevd started:"), "\(output)")
        #expect(output.contains("No control socket"), "\(output)")
        #expect(output.contains("unp0: added"), "\(output)")
    }
}

/// A hook (for link-added of `link` only) that starts a child ignoring SIGTERM, which writes its pid to
/// `pidFile`; once it is there, the hook waits for the child (`wait`) or exits.
private func hookWithStubbornChild(link: String, pidFile: String, waits: Bool) -> String {
    """
    #!/bin/sh
    [ "$1 $2" = "link-added \(link)" ] || exit 0
    sh -c 'trap "" TERM; echo $$ > \(pidFile).new; mv \(pidFile).new \(pidFile); exec sleep 300' &
    while [ ! -s \(pidFile) ]; do sleep 0.02; done
    \(waits ? "wait" : "exit 0")

    """
}

/// The pid written to `path`, once it is there.
private func pid(in path: String) throws -> pid_t {
    var value: pid_t?
    _ = waitUntil(timeout: 10) {
        value = (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
            pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return value != nil
    }
    return try #require(value, "the hook's child never wrote \(path)")
}

/// `true` once `pid` has exited (gone, or a zombie waiting for its new parent), within `timeout` seconds.
private func exited(_ pid: pid_t, within timeout: Double) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        if let close = stat.lastIndex(of: ")"), stat[close...].dropFirst(2).first == "Z" { return true }
        usleep(20_000)
    } while Date() < deadline
    return false
}

/// netdevd with ``hookWithStubbornChild(link:pidFile:waits:)`` as its hook, after `link` was added and the
/// hook's child wrote its pid; removes the link, the child and the pid file when it goes.
private final class StubbornChildScenario {
    let daemon: RunningDaemon
    let child: pid_t
    private let link: String
    private let pidFile = NSTemporaryDirectory() + "netdevd-child-\(UInt32.random(in: 0...UInt32.max)).pid"

    init(link: String, waits: Bool, killGraceMilliseconds: Int) throws {
        self.link = link
        daemon = try RunningDaemon(
            hook: hookWithStubbornChild(link: link, pidFile: pidFile, waits: waits),
            extraArguments: ["--hook-kill-grace", String(killGraceMilliseconds)])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ip("link", "add", link, "type", "veth", "peer", "name", link.dropLast() + "1")
        child = try pid(in: pidFile)
    }

    deinit {
        kill(child, SIGKILL)
        _ = try? ip("link", "del", link)
        try? FileManager.default.removeItem(atPath: pidFile)
    }
}

extension DaemonBadDayTests {
    @Test("at the stop, a running hook and its child that ignores SIGTERM are gone once netdevd has exited")
    func stopEndsHookGroups() throws {
        let scenario = try StubbornChildScenario(link: "sgr0", waits: true, killGraceMilliseconds: 500)
        let (daemon, child) = (scenario.daemon, scenario.child)
        let stopping = Date()
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
        // SIGTERM at the stop ended the hook; its child ignored it and got SIGKILL: well within the 10 s stop
        // timeout and before netdevd exited.
        #expect(Date().timeIntervalSince(stopping) < 5)
        #expect(exited(child, within: 1), "the hook's child \(child) outlived netdevd")
        let ends = try journal(of: daemon, "MESSAGE_ID", MessageKind.hookRunFailed.id) { !$0.isEmpty }
        let end = try #require(ends.first)
        #expect((end["MESSAGE"] as? String)?.contains("stopped with netdevd: 50-record: killed by signal 15") == true)
        #expect(end["PRIORITY"] as? String == "5")
    }

    @Test("a hook that exits leaving a process behind: the process is stopped after the grace, and the journal says so")
    func leftoversStopped() throws {
        let scenario = try StubbornChildScenario(link: "lft0", waits: false, killGraceMilliseconds: 500)
        let (daemon, child) = (scenario.daemon, scenario.child)
        #expect(exited(child, within: 5), "the process the hook left behind still runs")
        let warnings = try journal(of: daemon, "NETDEVD_HOOK", "50-record") { !$0.isEmpty }
        let warning = try #require(warnings.first)
        #expect((warning["MESSAGE"] as? String)?.contains("left processes running in its process group") == true)
        #expect(warning["PRIORITY"] as? String == "4")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
    }
}

extension DaemonBadDayTests {
    @Test("what a hook left behind, still within its grace when netdevd stops, does not outlive netdevd")
    func leftoversKilledAtExit() throws {
        let scenario = try StubbornChildScenario(link: "lfx0", waits: false, killGraceMilliseconds: 20000)
        let (daemon, child) = (scenario.daemon, scenario.child)
        usleep(200_000)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
        #expect(exited(child, within: 1), "the process the hook left behind outlived netdevd")
    }
}
