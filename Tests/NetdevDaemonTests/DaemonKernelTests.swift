import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

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

    @Test("the started entry says how long reading rtnetlink and udev's devices took, in its message and fields")
    func startSaysHowLongItRead() throws {
        let daemon = try RunningDaemon(configuration: "")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let started = try journal(of: daemon, "MESSAGE_ID", MessageKind.started.id) { !$0.isEmpty }.first
        let kernel = (started?["NETDEVD_KERNEL_READ_MSEC"] as? String).flatMap { Int($0) }
        let devices = (started?["NETDEVD_DEVICES_READ_MSEC"] as? String).flatMap { Int($0) }
        #expect(kernel != nil && devices != nil, "\(String(describing: started))")
        if let kernel, let devices {
            #expect(
                (started?["MESSAGE"] as? String)?.hasSuffix("; read in \(kernel) ms (rtnetlink), \(devices) ms (udev)")
                    == true)
        }
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

extension DaemonBadDayTests {
    @Test(
        "with no hook installed a change runs nothing; a hook dropped in while netdevd runs runs from the next change on"
    )
    func hookDroppedIn() throws {
        // At debug, every run that ended is said, hooks or none.
        let daemon = try RunningDaemon(extraArguments: ["--log-level", "debug"])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let output = daemon.directory + "/ran.txt"
        try ip("link", "add", "hdi0", "type", "veth", "peer", "name", "hdi1")
        defer { _ = try? ip("link", "del", "hdi0") }
        _ = try journal(of: daemon, "NETDEVD_IFNAME", "hdi1") { !$0.isEmpty }
        let path = daemon.directory + "/hooks.d/50-record"
        try "#!/bin/sh\necho \"$1 $2\" >> \(output)\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(chmod(path, 0o755) == 0)
        // The directory's change is read at once; a loaded machine gets a moment before the next change.
        usleep(300_000)
        try ip("link", "set", "hdi0", "up")
        try ip("link", "set", "hdi1", "up")
        _ = waitUntil { (try? String(contentsOfFile: output, encoding: .utf8))?.contains("link-state hdi1") == true }
        let lines = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(lines.contains("link-state hdi0\n") && lines.contains("link-state hdi1\n"), "\(lines)")
        #expect(!lines.contains("link-added"), "runs for changes seen before the hook was there: \(lines)")
        let runs = try journal(of: daemon, "MESSAGE_ID", MessageKind.hookRunFinished.id) { $0.count >= 2 }
        let said = runs.compactMap { $0["MESSAGE"] as? String }
        #expect(said.contains { $0.hasPrefix("Hooks for link-state hdi0 ran: 1 hook") }, "\(said)")
        #expect(!said.contains { $0.contains(" ran: 0 hooks") }, "a run with no hook: \(said)")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
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
