import Foundation
import KernelTestSupport
import NetdevSession
import NetdevWire
import Testing
import Udev
import Varlink

/// netdevd started the way systemd starts a service: an empty signal mask, default dispositions (the test
/// runner's own children inherit SIGTERM blocked, which would hide what netdevd does with a signal), and standard
/// output and error as `standardError` says.
final class ServiceLikeProcess {
    let pid: pid_t
    private var status: Int32?

    /// What the child gets as standard error.
    enum StandardError {
        /// The journal's stream, as systemd gives it (here: /dev/null).
        case null
        /// A pipe whose read end is already closed: every write fails with EPIPE (and SIGPIPE, unless ignored).
        case brokenPipe
        /// No descriptor 2 at all.
        case closed
        /// Appended to this file.
        case file(String)
    }

    init(_ arguments: [String], standardError: StandardError = .null, environment extra: [String: String] = [:]) throws
    {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        var ends: [Int32] = [-1, -1]
        switch standardError {
        case .null: posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .brokenPipe:
            #expect(pipe(&ends) == 0)
            // Only the copy on descriptor 2 may reach the child; the read end is closed below.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        case .closed: posix_spawn_file_actions_addclose(&actions, 2)
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 2, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var argv = arguments.map { strdup($0) } + [nil]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = nil
        environment.merge(extra) { _, given in given }
        var envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, &envp)
        if ends[0] >= 0 {
            close(ends[0])
            close(ends[1])
        }
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        self.pid = pid
    }

    /// Still running (not exited, not killed)?
    var isRunning: Bool {
        reap()
        return status == nil
    }

    /// The raw wait status once it ended, waiting up to `timeout` seconds; `nil` if it is still running.
    func waitStatus(timeout: Double = 10) -> Int32? {
        _ = waitUntil(timeout: timeout) { !isRunning }
        return status
    }

    private func reap() {
        guard status == nil else { return }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
    }
}

/// "exited 0", "killed by signal 15": a wait status in words, so a failed expectation says what happened.
func describe(_ status: Int32?) -> String {
    guard let status else { return "still running" }
    return status & 0x7f == 0 ? "exited \((status >> 8) & 0xff)" : "killed by signal \(status & 0x7f)"
}

@Suite("netdevd on bad days", .serialized, .tags(.kernel), KernelHarness.enabled)
struct BadDaysKernelTests {
    /// A directory for one test's files, removed at the end.
    func withDirectory(_ body: (String) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "netdevd-baddays-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(directory)
    }

    func arguments(_ directory: String, config: String? = nil, logTarget: String = "journal") -> [String] {
        [
            RunningDaemon.binary, "--config", config ?? directory + "/netdevd.conf", "--hooks-dir",
            directory + "/hooks.d", "--log-target", logTarget, "--socket", directory + "/io.netdevd",
        ]
    }

    @Test("SIGHUP and SIGTERM while the configuration is still being read: netdevd starts, then stops cleanly, exit 0")
    func signalsDuringStartUp() throws {
        try withDirectory { directory in
            // A FIFO as the configuration file holds netdevd in open() until the test writes it.
            let fifo = directory + "/netdevd.conf"
            #expect(mkfifo(fifo, 0o600) == 0)
            let daemon = try ServiceLikeProcess(arguments(directory))
            let blocked = waitUntil(timeout: 10) {
                // openat is system call 257 on x86_64, 56 on aarch64.
                let call = (try? String(contentsOfFile: "/proc/\(daemon.pid)/syscall", encoding: .utf8)) ?? ""
                return call.hasPrefix("257 ") || call.hasPrefix("56 ")
            }
            try #require(blocked, "netdevd never blocked opening its FIFO configuration")
            kill(daemon.pid, SIGHUP)
            kill(daemon.pid, SIGTERM)
            usleep(200_000)
            #expect(daemon.isRunning, "netdevd died of a signal that arrived during start-up")
            // Non-blocking: with no reader left (netdevd killed) this fails with ENXIO instead of waiting forever.
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(
                writer >= 0, "netdevd no longer reads its configuration: \(describe(daemon.waitStatus(timeout: 0)))")
            let text = Array("[Hooks]\nParallelism=2\n".utf8)
            #expect(write(writer, text, text.count) == text.count)
            close(writer)
            let status = daemon.waitStatus()
            #expect(describe(status) == "exited 0")
        }
    }

    @Test("standard error a broken pipe, or closed: netdevd logs (EPIPE, no SIGPIPE), follows links, stops with exit 0")
    func brokenStandardError() throws {
        try withDirectory { directory in
            for standardError in [ServiceLikeProcess.StandardError.brokenPipe, .closed] {
                let daemon = try ServiceLikeProcess(
                    arguments(directory, logTarget: "console"), standardError: standardError)
                // It logs at start and for every link change; each write fails. It still starts (its control
                // socket answers), and its model follows the link in and out.
                let socket = ["--socket", directory + "/io.netdevd"]
                func listed() -> String? {
                    (try? netdevctl(["links", "bp*", "--no-legend"] + socket)).flatMap {
                        $0.status == 0 ? $0.output : nil
                    }
                }
                #expect(waitUntil(timeout: 10) { listed() != nil }, "\(standardError): netdevd never answered")
                try ip("link", "add", "bp0", "type", "veth", "peer", "name", "bp1")
                #expect(waitUntil(timeout: 10) { listed()?.contains("bp0") == true }, "\(standardError): bp0 not seen")
                try ip("link", "del", "bp0")
                #expect(
                    waitUntil(timeout: 10) { listed().map { !$0.contains("bp0") } == true },
                    "\(standardError): bp0 seen after its deletion")
                #expect(daemon.isRunning, "\(standardError): \(describe(daemon.waitStatus(timeout: 0)))")
                if case .closed = standardError {
                    let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon.pid)/fd/2")
                    #expect(target == "/dev/null", "descriptor 2 should be /dev/null, not a socket netdevd made")
                }
                kill(daemon.pid, SIGTERM)
                #expect(describe(daemon.waitStatus()) == "exited 0", "\(standardError)")
            }
        }
    }

    /// The resident set of `pid` in KiB (VmRSS).
    static func residentKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// User plus system CPU time of `pid` so far, in clock ticks.
    static func cpuTicks(_ pid: Int32) -> Int {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th of them.
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
    }

    /// Tests/Harness/hostile-client.py, run as `nobody` with `setpriv` (the system's python3, not one in root's
    /// PATH that nobody may read) by `hostile(_:_:_:)`, and by `hostileClients` for the connections it holds open.
    static let hostileScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Harness/hostile-client.py").path

    /// Runs the hostile client as `nobody`; returns its JSON line.
    static func hostile(_ socket: String, _ mode: String, _ amount: Int) throws -> [String: Any] {
        let script = hostileScript
        let output = try run(
            [
                "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", script, socket,
                mode,
                String(amount),
            ])
        return try #require(try jsonObjects(output).first)
    }

    @Test(
        "hostile local clients (1,000 idle connections, 100 MB pipelined behind a Monitor, a 100 MB message, a non-root Reload): bounded memory, root served, each said"
    )
    func hostileClients() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        chmod(daemon.directory, 0o755)
        let pid = daemon.process.processIdentifier
        let socket = ["--socket", daemon.socket]
        let baseline = Self.residentKiB(pid)
        let peak = Protected(baseline)
        let sampling = Protected(true)
        let sampler = Thread {
            while sampling.withLock({ $0 }) {
                let now = Self.residentKiB(pid)
                peak.withLock { $0 = max($0, now) }
                usleep(20_000)
            }
        }
        sampler.start()
        defer { sampling.withLock { $0 = false } }

        // 1,000 connections from one user who never calls: 32 stay, the rest are closed at once.
        let script = Self.hostileScript
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        holder.arguments = [
            "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", script, daemon.socket,
            "connections",
            "1000",
        ]
        let holderInput = Pipe()
        let holderOutput = Pipe()
        holder.standardInput = holderInput
        holder.standardOutput = holderOutput
        try holder.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let more = holderOutput.fileHandleForReading.availableData
            if more.isEmpty { break }
            line += more
        }
        let held = try #require(try jsonObjects(String(decoding: line, as: UTF8.self)).first)
        #expect(held["still_open"] as? Int == 32, "\(held)")
        #expect(try netdevctl(["links"] + socket).status == 0, "root is served while another user holds its limit")
        let refused = try netdevctl(["links"] + socket, as: "65534")
        #expect(refused.status != 0)
        #expect(
            refused.errors.contains(
                #"io.netdevd.TooManyConnections {"reason":"uid 65534 already has 32 connections open"#),
            "\(refused.errors)")
        print("hostileClients: a 33rd connection of the same user: \(refused.errors)")
        try holderInput.fileHandleForWriting.close()
        holder.waitUntilExit()
        let afterConnections = Self.residentKiB(pid)

        // 100 MB of GetState calls pipelined behind a Monitor: netdevd stops reading at 64 pending calls.
        let pipelined = try Self.hostile(daemon.socket, "pipeline", 100_000_000)
        #expect(pipelined["outcome"] as? String == "socket full (netdevd stopped reading)", "\(pipelined)")
        #expect((pipelined["written"] as? Int ?? .max) < 8_000_000, "\(pipelined)")

        // One 100 MB message: closed once it passes 1 MiB.
        let huge = try Self.hostile(daemon.socket, "huge", 100_000_000)
        #expect(huge["outcome"] as? String == "closed by netdevd", "\(huge)")
        #expect((huge["written"] as? Int ?? .max) < 8_000_000, "\(huge)")

        // Reload by a user other than root: a Varlink error, and a journal line.
        let reload = try netdevctl(["reload"] + socket, as: "65534")
        #expect(reload.status != 0)
        #expect(reload.errors.contains("uid 0"), "\(reload.errors)")
        #expect(try netdevctl(["links"] + socket).status == 0)

        let messages = try journal(of: daemon, "SYSLOG_IDENTIFIER", "netdevd") { entries in
            entries.contains { ($0["MESSAGE"] as? String)?.hasPrefix("Refused Reload from") == true }
        }.compactMap { $0["MESSAGE"] as? String }
        let nobody = "(uid 65534)"
        #expect(messages.contains { $0.hasPrefix("Refused a control connection from pid ") && $0.contains(nobody) })
        #expect(
            messages.contains { $0.contains(nobody) && $0.hasSuffix("it sent a message longer than 1048576 bytes") })
        #expect(messages.contains { $0.hasPrefix("Refused Reload from pid ") && $0.contains(nobody) })
        sampling.withLock { $0 = false }
        let highest = peak.withLock { $0 }
        print(
            "hostileClients: RSS baseline \(baseline) KiB, after 1,000 connections \(afterConnections) KiB, peak "
                + "\(highest) KiB, end \(Self.residentKiB(pid)) KiB; pipelined \(pipelined["written"] ?? 0) bytes "
                + "taken, "
                + "huge message \(huge["written"] ?? 0) bytes taken")
        #expect(highest - baseline < 24 * 1024, "netdevd grew by \(highest - baseline) KiB")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("out of descriptors: a connection it cannot keep is answered why and closed; no spinning, no waiting client")
    func outOfDescriptors() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let pid = daemon.process.processIdentifier
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        // Room for two more descriptors (the soft limit only: lowering the hard one could not be undone).
        try run("prlimit", "--pid", String(pid), "--nofile=\(open + 2):")
        let clients = try (0..<6).map { _ in try VarlinkClient(path: daemon.socket) }
        usleep(300_000)
        let before = Self.cpuTicks(pid)
        sleep(2)
        let spent = Self.cpuTicks(pid) - before
        #expect(spent < 20, "netdevd used \(spent) ticks of CPU in 2 s with connections it cannot accept")
        print("outOfDescriptors: \(spent) ticks of CPU (1/100 s) in 2 s with connections it cannot accept")
        // A client now is told why, at once, instead of waiting in the listen queue.
        let refused = try netdevctl(["links", "--socket", daemon.socket])
        #expect(refused.status != 0)
        #expect(
            refused.errors.contains("netdevd is out of file descriptors (Too many open files)"), "\(refused.errors)")
        let said = try journal(of: daemon, "SYSLOG_IDENTIFIER", "netdevd") { entries in
            entries.contains { ($0["MESSAGE"] as? String)?.contains("out of file descriptors") == true }
        }
        let message = said.compactMap { $0["MESSAGE"] as? String }.first { $0.contains("out of file descriptors") }
        #expect(message?.hasPrefix("Refused a control connection from pid ") == true, "\(message ?? "")")
        withExtendedLifetime(clients) {}
        try run("prlimit", "--pid", String(pid), "--nofile=1024:")
        #expect(try netdevctl(["links", "--socket", daemon.socket]).status == 0)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("descriptor hygiene: hooks running while clients connect and other hooks run see only 0, 1 and 2, every run")
    func hooksSeeOnlyStandardDescriptors() throws {
        let output = NSTemporaryDirectory() + "netdevd-fds-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: output) }
        // ls's own descriptors: 0, 1 (the pipe to the shell), 2 and the directory it reads (3). One write per run
        // (O_APPEND), so runs at the same time do not interleave.
        let daemon = try RunningDaemon(
            hook: "#!/bin/sh\nprintf '%s: %s\\n' \"$1\" \"$(ls /proc/self/fd | tr '\\n' ' ')\" >> \(output)\n",
            configuration: "[Hooks]\nParallelism=8\n")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let connecting = Protected(true)
        let socket = daemon.socket
        let clients = Thread {
            while connecting.withLock({ $0 }) {
                _ = try? VarlinkClient(path: socket).call("io.netdevd.ListLinks")
            }
        }
        clients.start()
        let pairs = 40
        // No file until the first hook writes: none is 0 lines.
        let lineCount = { ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").count }
        try ipBatch((0..<pairs).map { "link add fd\($0)a type veth peer name fd\($0)b" })
        // The added runs first: an added run still waiting when its subject goes is cancelled with the removal
        // (neither runs, by design), which made the count below fall short now and then (a device's uevent comes
        // through udevd, later than its link's).
        let added = waitUntil(timeout: 60) { lineCount() >= 4 * pairs }
        #expect(added, "\(lineCount()) added runs of \(4 * pairs)")
        try ipBatch((0..<pairs).map { "link del fd\($0)a" })
        // Every link and device added and removed: 4 runs per link, 2 links per pair.
        let runs = 8 * pairs
        let finished = waitUntil(timeout: 60) { lineCount() >= runs }
        connecting.withLock { $0 = false }
        let lines = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(finished, "\(lines.count) hook runs of \(runs)")
        let strays = lines.filter { !$0.hasSuffix(": 0 1 2 3 ") }
        let events = Dictionary(grouping: lines, by: { $0.split(separator: ":").first ?? "" }).mapValues(\.count)
        print("hooksSeeOnlyStandardDescriptors: runs by event: \(events)")
        #expect(strays.isEmpty, "runs that saw more than 0-2 (and ls's 3): \(strays.prefix(5))")
        print("hooksSeeOnlyStandardDescriptors: \(lines.count) hook runs, \(strays.count) with other descriptors")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    /// The harness's private systemd-journald: the one in this test's network namespace.
    static func privateJournald() -> Int32? {
        privateProcesses("systemd-journal").first
    }

    /// Starts `daemon` (udevd, journald) again as the harness starts it, after a test killed the harness's own; the
    /// harness stops whatever is left in the namespace at its end.
    static func startAgain(_ daemon: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: daemon)
        process.environment = ["SYSTEMD_LOG_TARGET": "console", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    @Test("journald stuck (SIGSTOP) through a burst: the loop goes on, memory stays bounded, entries resume after")
    func journaldStuck() throws {
        let journald = try #require(Self.privateJournald(), "no private systemd-journald in this namespace")
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let pid = daemon.process.processIdentifier
        let baseline = Self.residentKiB(pid)
        kill(journald, SIGSTOP)
        var resumed = false
        defer { if !resumed { kill(journald, SIGCONT) } }
        let pairs = 300
        try ipBatch((0..<pairs).map { "link add js\($0)a type veth peer name js\($0)b" })
        // Nothing waits on the journal: netdevd lists every link while journald takes nothing.
        let listed = waitUntil(timeout: 20) {
            let links = (try? netdevctl(["links", "js*", "--no-legend", "--socket", daemon.socket]).output) ?? ""
            return links.split(separator: "\n").count == 2 * pairs
        }
        #expect(listed, "netdevd did not list all \(2 * pairs) links while journald was stopped")
        let stuck = Self.residentKiB(pid)
        try ipBatch((0..<pairs).map { "link del js\($0)a" })
        kill(journald, SIGCONT)
        resumed = true
        try ip("link", "add", "jsafter", "type", "veth", "peer", "name", "jsafter1")
        defer { _ = try? ip("link", "del", "jsafter") }
        let after = try journal(of: daemon, "NETDEVD_IFNAME", "jsafter") { !$0.isEmpty }
        #expect(!after.isEmpty, "no entry for a link added after journald came back")
        let drops = try run("journalctl", "--no-pager", "--all", "-o", "cat", "_PID=\(pid)")
            .split(separator: "\n").filter { $0.contains("journal entries were dropped") }
        print(
            "journaldStuck: RSS \(baseline) KiB before, \(stuck) KiB with \(2 * pairs) links and journald stopped; "
                + "drop warnings: \(drops)")
        #expect(stuck - baseline < 48 * 1024)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    /// The harness's private processes named `prefix` (by /proc/PID/comm): those in this test's network namespace.
    static func privateProcesses(_ prefix: String) -> [Int32] {
        let ours = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init) ?? []
        return pids.filter { pid in
            let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
            let namespace = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
            return name.hasPrefix(prefix) && namespace == ours
        }
    }

    /// The harness's udevd and its workers, killed as a crash or an OOM kill would: the control socket stays.
    static func killUdevd() throws {
        let udevd = privateProcesses("systemd-udevd")
        try #require(!udevd.isEmpty, "no private systemd-udevd in this namespace")
        for pid in udevd + privateProcesses("(udev-worker)") { kill(pid, SIGKILL) }
        #expect(waitUntil(timeout: 5) { privateProcesses("systemd-udevd").isEmpty })
    }

    /// Starts the udevd a test killed again, if it is not back yet, and waits until it listens: the tests after
    /// this one need it, whether this one passed or not.
    static func ensureUdevd() {
        if privateProcesses("systemd-udevd").isEmpty { _ = try? startAgain("/lib/systemd/systemd-udevd") }
        _ = waitUntil(timeout: 10) { UdevdStatus.probe() == .running }
    }

    /// The lines netdevd wrote to the journal so far.
    static func journalLines(of daemon: RunningDaemon) -> String {
        (try? run("journalctl", "--no-pager", "-o", "cat", "_PID=\(daemon.process.processIdentifier)")) ?? ""
    }

    /// How many tracked net devices' names start with `prefix`.
    static func netDevices(_ prefix: String, of daemon: RunningDaemon) -> Int {
        let listed =
            (try? netdevctl(["devices", "--subsystem", "net", "--no-legend", "--socket", daemon.socket]).output) ?? ""
        return listed.split(separator: "\n").filter { $0.contains(" \(prefix)") }.count
    }

    @Test(
        "udevd killed mid-burst: 'auto' follows the kernel meanwhile, 'udev' says so; both track all once it is back",
        arguments: [UdevSource.auto, .udev])
    func udevdRestarted(source: UdevSource) throws {
        defer { Self.ensureUdevd() }
        let daemon = try RunningDaemon(extraArguments: ["--udev-source", source.rawValue])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let socket = ["--socket", daemon.socket]
        defer { for index in 0..<50 { _ = try? ip("link", "del", "ur\(index)a") } }
        defer { _ = try? ip("link", "del", "urafter") }
        try ipBatch((0..<20).map { "link add ur\($0)a type veth peer name ur\($0)b" })
        try Self.killUdevd()
        try ipBatch((20..<50).map { "link add ur\($0)a type veth peer name ur\($0)b" })
        #expect(
            waitUntil(timeout: 10) {
                (try? netdevctl(["links", "ur*", "--no-legend"] + socket))?.output
                    .split(separator: "\n").count == 100
            })
        let outage =
            source == .auto
            ? "udevd is not running (nothing listens on /run/udev/control, left by a udevd that stopped) and "
                + "no device events followed the kernel's link changes: following the kernel's raw uevents"
            : "udevd is not running (nothing listens on /run/udev/control, left by a udevd that stopped): "
                + "no device events arrive until it starts (--udev-source udev"
        #expect(waitUntil(timeout: 15) { Self.journalLines(of: daemon).contains(outage) }, "not said: \(outage)")
        if source == .auto {
            #expect(
                waitUntil(timeout: 10) { Self.netDevices("ur", of: daemon) == 100 },
                "with udevd gone, 'auto' tracks \(Self.netDevices("ur", of: daemon)) of the 100 net devices")
        }
        let whileDown = Self.netDevices("ur", of: daemon)
        try Self.startAgain("/lib/systemd/systemd-udevd")
        let tracked = waitUntil(timeout: 20) { Self.netDevices("ur", of: daemon) == 100 }
        print(
            "udevdRestarted(\(source)): \(whileDown) of 100 new net devices tracked while udevd was down, "
                + "\(Self.netDevices("ur", of: daemon)) after")
        #expect(
            tracked, "netdevd tracks \(Self.netDevices("ur", of: daemon)) of the 100 net devices after udevd came back")
        let back =
            source == .auto
            ? "udevd started: device events from udevd again, with udev's properties; re-reading devices"
            : "udevd started: re-reading devices"
        #expect(waitUntil(timeout: 10) { Self.journalLines(of: daemon).contains(back) }, "not said: \(back)")
        // Events come from udevd again: a new device has the properties udevd adds.
        try ip("link", "add", "urafter", "type", "veth", "peer", "name", "urafter1")
        let fromUdevd = waitUntil(timeout: 10) {
            (try? netdevctl(["device", "urafter"] + socket))?.output.contains("ID_NET_DRIVER=veth") == true
        }
        #expect(fromUdevd, "a device added after udevd came back lacks udev's properties")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test(
        "stale /run/udev/control at start: 'auto' tracks all via the kernel, 'udev' says so once; both resume",
        arguments: [UdevSource.auto, .udev])
    func staleUdevControlSocket(source: UdevSource) throws {
        defer { Self.ensureUdevd() }
        try Self.killUdevd()
        let daemon = try RunningDaemon(extraArguments: ["--udev-source", source.rawValue])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        defer { for index in 0..<50 { _ = try? ip("link", "del", "us\(index)a") } }
        try ipBatch((0..<50).map { "link add us\($0)a type veth peer name us\($0)b" })
        let outage = "udevd is not running (nothing listens on /run/udev/control"
        if source == .auto {
            let tracked = waitUntil(timeout: 10) { Self.netDevices("us", of: daemon) == 100 }
            print("staleUdevControlSocket(auto): \(Self.netDevices("us", of: daemon)) of 100 new net devices tracked")
            #expect(tracked, "netdevd tracks \(Self.netDevices("us", of: daemon)) of 100 new net devices")
            #expect(
                Self.journalLines(of: daemon).contains(
                    "Monitoring udev source 'kernel' (auto: udevd is not running, nothing listens on /run/udev/control"
                ))
        } else {
            // The start said it; the links' changes with no uevent after them must not make netdevd say it again.
            Thread.sleep(forTimeInterval: 3)
            let said = Self.journalLines(of: daemon).split(separator: "\n").filter { $0.contains(outage) }
            print("staleUdevControlSocket(udev): \(said.count) line(s) about udevd not running: \(said)")
            #expect(said.count == 1, "\(said)")
        }
        try Self.startAgain("/lib/systemd/systemd-udevd")
        let back = source == .auto ? "udevd started: device events from udevd again" : "udevd started: re-reading"
        #expect(waitUntil(timeout: 10) { Self.journalLines(of: daemon).contains(back) })
        #expect(waitUntil(timeout: 10) { Self.netDevices("us", of: daemon) == 100 })
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("udevd killed within 10 s of a probe that found it running: the link changes after are checked later")
    func udevdDiesAfterProbe() throws {
        defer { Self.ensureUdevd() }
        let daemon = try RunningDaemon(extraArguments: ["--log-level", "debug"])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        defer { _ = try? ip("link", "del", "up0a") }
        try ip("link", "add", "up0a", "type", "veth", "peer", "name", "up0b")
        #expect(waitUntil(timeout: 10) { Self.netDevices("up0", of: daemon) == 2 })
        // A change no uevent follows: netdevd probes udevd (2 s later, or 10 s after its last probe), finds it
        // running and says so at debug. udevd is killed as soon as that is in the journal: within the 10 s in which
        // the probe is trusted.
        let probed = "udevd checked: running"
        func probes() -> Int { Self.journalLines(of: daemon).components(separatedBy: probed).count - 1 }
        let earlier = probes()
        try ip("link", "set", "up0a", "up")
        #expect(waitUntil(timeout: 30) { probes() > earlier }, "no probe after 'set up' found udevd running")
        try Self.killUdevd()
        defer { for index in 0..<10 { _ = try? ip("link", "del", "uq\(index)a") } }
        try ipBatch((0..<10).map { "link add uq\($0)a type veth peer name uq\($0)b" })
        let burst = Date()
        let tracked = waitUntil(timeout: 20) { Self.netDevices("uq", of: daemon) == 20 }
        print(
            "udevdDiesAfterProbe: \(Self.netDevices("uq", of: daemon)) of 20 new net devices tracked "
                + String(format: "%.1f s after the burst", Date().timeIntervalSince(burst)))
        #expect(tracked, "the burst after udevd's death was never checked")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("no /run/udev at start: 'auto' takes the kernel's uevents, and goes to udevd once udevd makes /run/udev")
    func udevRunDirectoryMissing() throws {
        try Self.killUdevd()
        try FileManager.default.moveItem(atPath: "/run/udev", toPath: "/run/udev.saved")
        defer {
            // udevd's own /run/udev back, with its database of the devices, for the tests after this one.
            for pid in Self.privateProcesses("systemd-udevd") + Self.privateProcesses("(udev-worker)") {
                kill(pid, SIGKILL)
            }
            _ = waitUntil(timeout: 5) { Self.privateProcesses("systemd-udevd").isEmpty }
            do {
                if FileManager.default.fileExists(atPath: "/run/udev") {
                    try FileManager.default.removeItem(atPath: "/run/udev")
                }
                try FileManager.default.moveItem(atPath: "/run/udev.saved", toPath: "/run/udev")
            } catch {
                Issue.record("udevd's /run/udev could not be put back, later tests may fail for it: \(error)")
            }
            Self.ensureUdevd()
        }
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        #expect(
            Self.journalLines(of: daemon).contains(
                "Monitoring udev source 'kernel' (auto: udevd is not running, /run/udev/control does not exist"))
        try Self.startAgain("/lib/systemd/systemd-udevd")
        let back = waitUntil(timeout: 10) {
            Self.journalLines(of: daemon).contains("udevd started: device events from udevd again")
        }
        #expect(back, "netdevd did not notice udevd making /run/udev and starting")
        defer { _ = try? ip("link", "del", "rm0a") }
        try ip("link", "add", "rm0a", "type", "veth", "peer", "name", "rm0b")
        let fromUdevd = waitUntil(timeout: 10) {
            (try? netdevctl(["device", "rm0a", "--socket", daemon.socket]))?.output.contains("ID_NET_DRIVER=veth")
                == true
        }
        #expect(fromUdevd, "a device added after udevd started lacks udev's properties")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    /// What netdevd knows, as lines to compare with the kernel's and udev's: links (index, name, MTU), addresses
    /// (index, address/prefix) and devices (subsystem, syspath). `nil` while it is not running (enumerating,
    /// resyncing) or does not answer.
    static func known(_ daemon: RunningDaemon) -> (links: [String], addresses: [String], devices: [String])? {
        guard let client = try? VarlinkClient(path: daemon.socket),
            let state = try? client.call("io.netdevd.GetState")["state"]?.decode(as: StateReport.self),
            state.phase == "running",
            let devices = try? client.call("io.netdevd.ListDevices")["devices"]?.decode(as: [DeviceReport].self)
        else { return nil }
        return (
            state.links.map { "\($0.index) \($0.name) \($0.mtu ?? 0)" }.sorted(),
            state.links.flatMap { link in link.addresses.map { "\(link.index) \($0)" } }.sorted(),
            devices.map { "\($0.subsystem) \($0.syspath)" }.sorted()
        )
    }

    /// The same lines from `ip -j link`, `ip -j address` and udev's enumeration of `subsystems`.
    static func actual(subsystems: [String]) throws -> (links: [String], addresses: [String], devices: [String]) {
        let (links, addresses) = try kernelLinksAndAddresses()
        let devices = try UdevEnumerator().devices(subsystems: subsystems).map {
            "\($0.subsystem ?? "") \($0.syspath)"
        }
        return (links, addresses, devices.sorted())
    }

    @Test(
        "100 overflows in a row (4 KiB receive buffers, bursts back to back): no drift from the kernel and udev after")
    func hundredOverflows() throws {
        let daemon = try RunningDaemon(extraArguments: ["--receive-buffer", "4096"])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        defer {
            let names = (try? jsonObjects(ip("-j", "link", "show")))?.compactMap { $0["ifname"] as? String } ?? []
            _ = try? ipBatch(names.filter { $0.hasPrefix("ov") && $0.hasSuffix("a") }.map { "link del \($0)" })
        }
        func resyncs() -> Int {
            (try? VarlinkClient(path: daemon.socket).call("io.netdevd.GetState")["state"]?.decode(
                as: StateReport.self))?.resyncs ?? 0
        }
        let started = Date()
        // Each round changes 30 of 40 veth pairs at once: added (raised and addressed) or deleted, MTU, an address
        // replaced, down or up; the next round starts at once, so overflows hit resyncs still under way.
        var present = Set<Int>()
        var rounds = 0
        while resyncs() < 100 && rounds < 400 {
            var commands: [String] = []
            for offset in 0..<30 {
                let pair = (rounds * 13 + offset) % 40
                let name = "ov\(pair)a"
                switch (present.contains(pair), (pair + rounds) % 4) {
                case (false, _):
                    commands += [
                        "link add \(name) type veth peer name ov\(pair)b", "link set \(name) up",
                        "link set ov\(pair)b up", "address add 198.19.\(pair).1/24 dev \(name)",
                    ]
                    present.insert(pair)
                case (true, 0):
                    commands.append("link del \(name)")
                    present.remove(pair)
                case (true, 1):
                    commands.append("link set \(name) mtu \(1280 + rounds % 200)")
                case (true, 2):
                    commands.append("address replace 198.19.\(pair).\(2 + rounds % 200)/24 dev \(name)")
                default:
                    commands.append("link set \(name) \(rounds % 2 == 0 ? "down" : "up")")
                }
            }
            try ipBatch(commands)
            rounds += 1
        }
        // A few changes right after the last round, while its resync may still run: not to be lost either.
        try ipBatch(
            present.sorted().prefix(10).flatMap { pair in
                ["link set ov\(pair)a mtu 1500", "address add 198.19.\(pair).250/24 dev ov\(pair)a"]
            })
        let forced = resyncs()
        let burstSeconds = Date().timeIntervalSince(started)
        #expect(forced >= 100, "only \(forced) overflows in \(rounds) rounds")
        // Zero drift: once the bursts stop, netdevd's links, addresses and devices become the kernel's and udev's
        // (udev's events trail the kernel's; the last resync may still run), and stay so.
        let subsystems = Configuration().trackedSubsystems
        var last: (known: [String], actual: [String]) = ([], [])
        let converged = waitUntil(timeout: 60) {
            guard let known = Self.known(daemon), let actual = try? Self.actual(subsystems: subsystems) else {
                return false
            }
            last = (
                known.links + known.addresses + known.devices, actual.links + actual.addresses + actual.devices
            )
            return last.known == last.actual
        }
        let settledSeconds = Date().timeIntervalSince(started) - burstSeconds
        let onlyKnown = Set(last.known).subtracting(last.actual).sorted().prefix(10)
        let onlyActual = Set(last.actual).subtracting(last.known).sorted().prefix(10)
        let seconds = { (value: Double) in String(format: "%.1f", value) }
        print(
            "hundredOverflows: \(forced) overflows in \(rounds) rounds (\(seconds(burstSeconds)) s); after: "
                + "\(last.actual.count) lines (links, addresses, devices), equal: \(converged) after "
                + "\(seconds(settledSeconds)) s; RSS \(Self.residentKiB(daemon.process.processIdentifier)) KiB")
        #expect(converged, "drift after the overflows: netdevd only \(onlyKnown), kernel or udev only \(onlyActual)")
        #expect(daemon.process.isRunning)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("journald killed mid-burst and started again: the loop goes on, entries resume, the loss is said")
    func journaldRestarted() throws {
        let journald = try #require(Self.privateJournald(), "no private systemd-journald in this namespace")
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let pid = daemon.process.processIdentifier
        let pairs = 100
        defer { for index in 0..<pairs { _ = try? ip("link", "del", "jr\(index)a") } }
        try ipBatch((0..<pairs / 2).map { "link add jr\($0)a type veth peer name jr\($0)b" })
        // Killed mid-burst, as an OOM kill would: its socket stays behind, and every write to it is refused.
        let socket = "/run/systemd/journal/socket"
        func inode() -> UInt64? {
            var status = stat()
            return stat(socket, &status) == 0 ? UInt64(status.st_ino) : nil
        }
        let stale = inode()
        kill(journald, SIGKILL)
        try ipBatch((pairs / 2..<pairs).map { "link add jr\($0)a type veth peer name jr\($0)b" })
        let listed = waitUntil(timeout: 20) {
            let links = (try? netdevctl(["links", "jr*", "--no-legend", "--socket", daemon.socket]).output) ?? ""
            return links.split(separator: "\n").count == 2 * pairs
        }
        #expect(listed, "netdevd did not list all \(2 * pairs) links while journald was down")
        try Self.startAgain("/lib/systemd/systemd-journald")
        // The killed journald's socket file stays: the new one is up once it has bound a socket of its own there.
        #expect(waitUntil(timeout: 10) { inode().map { $0 != stale } ?? false }, "journald did not come back")
        try ip("link", "add", "jrafter", "type", "veth", "peer", "name", "jrafter1")
        defer { _ = try? ip("link", "del", "jrafter") }
        let after = try journal(of: daemon, "NETDEVD_IFNAME", "jrafter") { !$0.isEmpty }
        #expect(!after.isEmpty, "no entry for a link added after journald came back")
        let lost = try run("journalctl", "--no-pager", "--all", "-o", "cat", "_PID=\(pid)")
            .split(separator: "\n").filter { $0.contains("journal entries were lost") }
        print("journaldRestarted: \(lost)")
        #expect(lost.count == 1, "the loss is said once, after journald is back: \(lost)")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("a service manager that reads no notification: netdevd goes on, says so once, and SIGTERM ends it, exit 0")
    func notifySocketStuck() throws {
        try withDirectory { directory in
            // The manager's socket, never read: its queue fills with watchdog pings (every 25 ms), and sd_notify(3)
            // would then block netdevd's notifications, and its stop, which waits for them, for good.
            let manager = try NotifySocket()
            let errors = directory + "/stderr"
            let daemon = try ServiceLikeProcess(
                arguments(directory, logTarget: "console"), standardError: .file(errors),
                environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "50000"])
            let socket = ["--socket", directory + "/io.netdevd"]
            #expect(waitUntil(timeout: 10) { (try? netdevctl(["links"] + socket).status) == 0 })
            #expect(
                waitUntil(timeout: 15) {
                    ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").contains("took no notification")
                })
            try ipBatch(["link add ns0a type veth peer name ns0b"])
            defer { _ = try? ipBatch(["link del ns0a"]) }
            #expect(
                waitUntil(timeout: 10) {
                    (try? netdevctl(["links", "ns0a"] + socket))?.output.contains("ns0a") == true
                })
            kill(daemon.pid, SIGTERM)
            #expect(describe(daemon.waitStatus(timeout: 15)) == "exited 0")
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.components(separatedBy: "took no notification").count == 2, "\(said)")
            withExtendedLifetime(manager) {}
        }
    }

    @Test("--record into a pipe nobody reads: netdevd goes on, and SIGTERM still ends it (exit 0) with the loss said")
    func recordToStuckPipe() throws {
        try withDirectory { directory in
            let fifo = directory + "/record.fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            // A reader that never reads: netdevd's open succeeds, its writes block once the pipe holds 64 KiB.
            let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            defer { close(reader) }
            let errors = directory + "/stderr"
            let daemon = try ServiceLikeProcess(
                arguments(directory) + ["--record", fifo], standardError: .file(errors))
            let socket = ["--socket", directory + "/io.netdevd"]
            #expect(waitUntil(timeout: 10) { (try? netdevctl(["links"] + socket).status) == 0 })
            try ipBatch((0..<200).map { "link add rp\($0)a type veth peer name rp\($0)b" })
            try ipBatch((0..<200).map { "link del rp\($0)a" })
            #expect(
                waitUntil(timeout: 10) { (try? netdevctl(["links", "rp*"] + socket))?.output.contains("rp") == false })
            kill(daemon.pid, SIGTERM)
            #expect(describe(daemon.waitStatus(timeout: 15)) == "exited 0")
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.contains("bytes not written: the file took nothing for 5 s"), "\(said)")
        }
    }

    @Test("--record onto a full file system: recording stops with the reason said, netdevd goes on")
    func recordToFullDisk() throws {
        try withDirectory { directory in
            let small = directory + "/small"
            try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
            try run("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small)
            defer { _ = try? run("umount", small) }
            let errors = directory + "/stderr"
            let daemon = try ServiceLikeProcess(
                arguments(directory) + ["--record", small + "/events.jsonl"], standardError: .file(errors))
            let socket = ["--socket", directory + "/io.netdevd"]
            #expect(waitUntil(timeout: 10) { (try? netdevctl(["links"] + socket).status) == 0 })
            try ipBatch((0..<100).map { "link add fd\($0)a type veth peer name fd\($0)b" })
            defer { _ = try? ipBatch((0..<100).map { "link del fd\($0)a" }) }
            let listed = waitUntil(timeout: 10) {
                (try? netdevctl(["links", "fd*", "--no-legend"] + socket))?.output.split(separator: "\n").count == 200
            }
            #expect(listed)
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.contains("recording stopped: No space left on device"), "\(said)")
            kill(daemon.pid, SIGTERM)
            #expect(describe(daemon.waitStatus()) == "exited 0")
        }
    }

    @Test(
        "a reload with each kind of bad value: netdevd stays up, the old configuration stays, file:line in the journal")
    func reloadWithBadValues() throws {
        let daemon = try RunningDaemon(configuration: "[Hooks]\r\nParallelism=2\r\n")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let dropIns = daemon.directory + "/netdevd.conf.d"
        // A line not understood is a warning (the line ignored, the reload done); a file that cannot be read at all
        // keeps the previous configuration.
        let cases: [(name: String, content: String?, line: Int, says: String, rejected: Bool)] = [
            ("10-span.conf", "[Hooks]\nTimeoutSec=1e300\n", 2, "TimeoutSec='1e300' is not a time span", false),
            ("10-huge.conf", "[Hooks]\nTimeoutSec=99999999999h\n", 2, "is longer than 365 days", false),
            ("10-debounce.conf", "[Hooks]\nDebounceSec=infinity\n", 2, "DebounceSec= cannot be infinity", false),
            ("10-range.conf", "\u{FEFF}[Hooks]\r\nParallelism=65\r\n", 2, "Parallelism='65' must be a number", false),
            ("10-state.conf", "[Online]\nMinimumOperationalState=fast\n", 2, "MinimumOperationalState='fast'", false),
            ("10-key.conf", "[Online]\nRequiredInterface=eth0\n", 2, "did you mean 'RequiredInterfaces'?", false),
            ("10-big.conf", String(repeating: "#\n", count: 600_000), 0, "is larger than 1 MiB", true),
            ("10-dir.conf", nil, 0, "cannot be read: Is a directory", true),
        ]
        var (warned, rejected) = (0, 0)
        for bad in cases {
            let path = dropIns + "/" + bad.name
            if let content = bad.content {
                try content.write(toFile: path, atomically: true, encoding: .utf8)
            } else {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            }
            daemon.signal(SIGHUP)
            #expect(daemon.notify.receive(until: "RELOADING=1") != nil, "\(bad.name)")
            #expect(daemon.notify.receive(until: "READY=1") != nil, "\(bad.name)")
            let kind = bad.rejected ? MessageKind.reloadFailed : .configurationWarning
            let seen = bad.rejected ? rejected : warned
            let entries = try journal(of: daemon, "MESSAGE_ID", kind.id) { $0.count > seen }
            let entry = try #require(entries.last, "nothing logged for \(bad.name)")
            #expect(entries.count == seen + 1, "\(bad.name): \(entries.count - seen) entries")
            #expect(entry["NETDEVD_CONFIG_FILE"] as? String == path)
            #expect(entry["NETDEVD_CONFIG_LINE"] as? String == String(bad.line), "\(bad.name)")
            let message = entry["MESSAGE"] as? String ?? ""
            if bad.rejected {
                #expect(message.hasPrefix("Configuration not reloaded, the previous one stays in force: "))
                rejected += 1
            } else {
                #expect(message.hasSuffix("; the line is ignored"), "\(message)")
                warned += 1
            }
            #expect(message.contains(bad.says), "\(message)")
            try FileManager.default.removeItem(atPath: path)
        }
        // The CRLF main file with nothing else reloads cleanly, and netdevd stops as usual.
        daemon.signal(SIGHUP)
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let failures = try journal(of: daemon, "MESSAGE_ID", MessageKind.reloadFailed.id) { _ in true }
        #expect(failures.count == rejected)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}
