import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Synchronization
import Systemd
import Testing
import Varlink

/// Runs netdevctl with `arguments`; returns its exit status, standard output and standard error.
func netdevctl(_ arguments: [String], as user: String? = nil) throws -> (status: Int32, output: String, errors: String)
{
    let process = Process()
    let binary = RunningDaemon.built("netdevctl")
    if let user {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", binary] + arguments
    } else {
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
    }
    var environment = ProcessInfo.processInfo.environment
    environment["NO_COLOR"] = "1"
    process.environment = environment
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

@Suite("netdevctl against netdevd", .serialized, .tags(.kernel), KernelHarness.enabled)
struct NetdevctlKernelTests {
    @Test("status, links, link and devices, as tables and as JSON")
    func queries() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        // No IPv6 link-local addresses (addrgenmode none), so every state below is exact: ctl1 carrier, ctl0
        // routable with one address.
        try ip("link", "add", "ctl0", "type", "veth", "peer", "name", "ctl1")
        defer { _ = try? ip("link", "del", "ctl0") }
        for name in ["ctl0", "ctl1"] { try ip("link", "set", name, "addrgenmode", "none") }
        try ip("link", "set", "ctl0", "up")
        try ip("link", "set", "ctl1", "up")
        try ip("addr", "add", "192.0.2.44/24", "dev", "ctl0")
        let kernel = Dictionary(
            uniqueKeysWithValues: try jsonObjects(try run(["ip", "-j", "link", "show"])).compactMap { link in
                (link["ifname"] as? String).map { ($0, link) }
            })
        let index0 = try #require(kernel["ctl0"]?["ifindex"] as? Int)
        let index1 = try #require(kernel["ctl1"]?["ifindex"] as? Int)
        let mac0 = try #require(kernel["ctl0"]?["address"] as? String)
        let socket = ["--socket", daemon.socket]
        _ = waitUntil { (try? netdevctl(["link", "ctl0"] + socket))?.output.contains("routable") == true }
        // Devices come from udev, links from rtnetlink: wait for both veth devices too.
        _ = waitUntil {
            let devices = (try? netdevctl(["devices", "--subsystem", "net"] + socket))?.output ?? ""
            return devices.contains("ctl0") && devices.contains("ctl1")
        }
        let status = try netdevctl(["status"] + socket)
        #expect(status.status == 0)
        #expect(status.output.contains("Online state: online"))
        let header = status.output.split(separator: "\n").first { $0.hasPrefix("IDX") }
        #expect(header?.split(separator: " ") == ["IDX", "LINK", "TYPE", "OPERATIONAL"])
        #expect(status.output.contains("192.0.2.44/24"))
        #expect(status.output.hasSuffix("\nHooks: none\n"), "\(status.output)")
        // A hook for every event and one in link-state.d count at once (no reload), and a refused file is said.
        let hooks = daemon.directory + "/hooks.d", linkState = daemon.directory + "/link-state.d"
        try FileManager.default.createDirectory(atPath: linkState, withIntermediateDirectories: true)
        for (path, mode) in [
            (hooks + "/10-all", 0o755), (linkState + "/20-state", 0o755), (linkState + "/30-open", 0o777),
        ] {
            try "#!/bin/sh\n".write(toFile: path, atomically: true, encoding: .utf8)
            #expect(chmod(path, mode_t(mode)) == 0)
        }
        let counted = try netdevctl(["status"] + socket)
        #expect(
            counted.output.hasSuffix(
                "\nHooks: link-added 1, link-state 2, link-removed 1, device-added 1, device-changed 1, device-removed 1, "
                    + "device-moved 1, online-state 1 (1 refused: see netdevd's journal)\n"), "\(counted.output)")

        let width = max(String(index0).count, String(index1).count)
        let row = { (index: Int, rest: String) in
            String(index).padding(toLength: width, withPad: " ", startingAt: 0) + rest
        }
        let rows = [(index0, " ctl0 veth routable"), (index1, " ctl1 veth carrier")].sorted { $0.0 < $1.0 }
        let links = try netdevctl(["links", "ctl*", "--no-legend"] + socket)
        #expect(links.output == rows.map(row).joined(separator: "\n") + "\n")
        let link = try netdevctl(["link", "ctl0"] + socket)
        #expect(
            link.output == """
                \(index0): ctl0
                       Type: veth
                Operational: routable
                   Hardware: \(mac0)
                        MTU: 1500
                    Address: 192.0.2.44/24

                """)
        let json = try netdevctl(["--json=short", "links", "ctl0"] + socket)
        #expect(
            json.output == #"[{"addresses":["192.0.2.44/24"],"gateways":[],"index":"# + "\(index0)"
                + #","macAddress":""# + mac0
                + #"","mtu":1500,"name":"ctl0","operationalState":"routable","type":"veth"}]"#
                + "\n")
        let devices = try netdevctl(["devices", "--subsystem", "net", "--no-legend"] + socket)
        #expect(devices.output == "net ctl0 - -\nnet ctl1 - -\nnet lo   - -\n")
        // Every subsystem: by subsystem, then name.
        let all = try netdevctl(["devices", "--no-legend"] + socket).output.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).prefix(2).map(String.init)
        }
        #expect(all == all.sorted { ($0.first ?? "", $0.last ?? "") < ($1.first ?? "", $1.last ?? "") })
        let none = try netdevctl(["--json=pretty", "devices", "--subsystem", "nosuch"] + socket)
        #expect(none.output == "[]\n")
        let pretty = try netdevctl(["--json=pretty", "link", "ctl1"] + socket)
        #expect(
            pretty.output.contains("  \"addresses\": [],\n") && pretty.output.contains("  \"gateways\": []"),
            "\(pretty.output)")
        // udev's properties, as `udevadm info` has them, after the main facts.
        let device = try netdevctl(["device", "ctl1"] + socket).output
        #expect(device.hasPrefix("ctl1\n     Path: /sys/devices/virtual/net/ctl1\nSubsystem: net\nProperties:\n"))
        #expect(device.contains("\n  INTERFACE=ctl1\n") && device.contains("\n  IFINDEX=\(index1)\n"), "\(device)")
        let deviceJSON = try jsonObjects(try netdevctl(["--json=short", "device", "ctl1"] + socket).output).first
        #expect((deviceJSON?["properties"] as? [String: Any])?["INTERFACE"] as? String == "ctl1")
        let missing = try netdevctl(["link", "nosuch0"] + socket)
        #expect(missing.status == 1 && missing.errors.contains("no link named 'nosuch0'"))
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("wait-online returns when the link is ready, and on timeout names what is missing (exit 75)")
    func waitOnline() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let socket = ["--socket", daemon.socket]
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) {
            _ = try? ip("link", "add", "wo0", "type", "veth", "peer", "name", "wo1")
            _ = try? ip("link", "set", "wo1", "up")
            _ = try? ip("link", "set", "wo0", "up")
            _ = try? ip("addr", "add", "198.51.100.9/24", "dev", "wo0")
        }
        defer { _ = try? ip("link", "del", "wo0") }
        let started = Date()
        let ready = try netdevctl(["wait-online", "--interface", "wo0", "--timeout", "10s"] + socket)
        #expect(ready.status == 0)
        #expect(ready.output.hasPrefix("Online after ") && ready.output.contains("wo0 (needs routable): wo0 routable"))
        #expect(Date().timeIntervalSince(started) < 8)
        let timedOut = try netdevctl(
            ["wait-online", "--interface", "wo1:routable", "--interface", "absent0", "--timeout", "500ms"] + socket)
        #expect(timedOut.status == 75)
        #expect(timedOut.errors.contains("absent0: no such link yet (needs routable)"))
        #expect(timedOut.errors.contains("wo1:") && timedOut.errors.contains("needs routable"))
        let any = try netdevctl(
            ["wait-online", "--any", "--interface", "wo1", "--interface", "wo0", "--timeout", "2s"] + socket)
        #expect(any.status == 0)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("monitor follows devices: added, renamed, removed; filtered by subsystem and glob; --json carries them")
    func monitorDevices() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let socket = ["--socket", daemon.socket]
        let lines = try FollowingNetdevctl(["monitor", "--devices-only", "--subsystem", "net", "md*"] + socket)
        let stream = try FollowingNetdevctl(["--json=short", "monitor", "--links-only", "md*"] + socket)
        let devicesStream = try FollowingNetdevctl(["--json=short", "monitor", "--subsystem", "net", "md*"] + socket)
        #expect(waitUntil { lines.output.contains("0 devices") }, "no first state: \(lines.output)")
        try ip("link", "add", "md0", "type", "veth", "peer", "name", "md1")
        defer { _ = try? ip("link", "del", "md2") }
        try ip("link", "add", "other0", "type", "veth", "peer", "name", "other1")
        defer { _ = try? ip("link", "del", "other0") }
        _ = waitUntil { lines.output.contains("net device md1 added") }
        try ip("link", "set", "md0", "name", "md2")
        _ = waitUntil { lines.output.contains("renamed") }
        try ip("link", "del", "md2")
        _ = waitUntil { lines.output.contains("net device md2 removed") }
        let text = lines.output
        #expect(text.contains("] net device md0 added (/sys/devices/virtual/net/md0)\n"), "\(text)")
        #expect(text.contains("] net device md0 renamed to md2\n"), "\(text)")
        #expect(text.contains("] net device md2 removed (/sys/devices/virtual/net/md2)\n"), "\(text)")
        #expect(text.contains("] net device md1 removed"), "\(text)")
        #expect(!text.contains("other") && !text.contains("md0: added"), "\(text)")
        #expect(!text.contains("md0 removed"), "a rename is not a removal: \(text)")

        // Both streams end with every md device and link gone, after states that held md2.
        _ = waitUntil {
            [(devicesStream, "\"devices\":[]"), (stream, "\"links\":[]")].allSatisfy { follower, empty in
                let text = follower.output
                return text.contains("md2") && text.split(separator: "\n").last?.contains(empty) == true
            }
        }
        let states = try jsonObjects(devicesStream.output)
        let devicesSeen = states.compactMap { $0["devices"] as? [[String: Any]] }
        #expect(
            devicesSeen.contains { devices in
                devices.contains {
                    $0["syspath"] as? String == "/sys/devices/virtual/net/md2"
                        && ($0["properties"] as? [String: Any])?["INTERFACE"] as? String == "md2"
                }
            }, "\(devicesStream.output)")
        #expect(devicesSeen.allSatisfy { $0.allSatisfy { ($0["sysname"] as? String)?.hasPrefix("md") == true } })
        let linkStates = try jsonObjects(stream.output)
        #expect(linkStates.allSatisfy { $0["devices"] == nil }, "--links-only carries no devices")
        #expect(
            linkStates.contains {
                ($0["links"] as? [[String: Any]])?.contains { $0["name"] as? String == "md2" } == true
            }, "\(stream.output)")
        #expect(try netdevctl(["monitor", "--links-only", "--devices-only"] + socket).status == 2)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test(
        "reload: root may, others get PermissionDenied; monitor follows changes; unreachable is exit 69, usage exit 2")
    func reloadMonitorAndErrors() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let socket = ["--socket", daemon.socket]
        #expect(try netdevctl(["reload"] + socket).status == 0)
        #expect(daemon.notify.receive(until: "RELOADING=1") != nil)
        let denied = try netdevctl(["reload"] + socket, as: "65534")
        #expect(denied.status == 1)
        #expect(denied.errors.contains("io.netdevd.PermissionDenied"))
        #expect(try netdevctl(["status"] + socket, as: "65534").status == 0)

        let sequences = Mutex<[Int]>([])
        let stream = VarlinkClient.stream(path: daemon.socket, "io.netdevd.Monitor")
        let reader = Task {
            for try await reply in stream {
                let sequence = Int((reply["state"] ?? reply["change"])?["sequence"]?.numberValue ?? -1)
                sequences.withLock { $0.append(sequence) }
                if sequences.withLock({ $0.count }) >= 6 { break }
            }
        }
        usleep(300_000)
        try ip("link", "add", "mon0", "type", "veth", "peer", "name", "mon1")
        try ip("link", "set", "mon0", "up")
        try ip("link", "del", "mon0")
        _ = waitUntil { sequences.withLock { $0.count } >= 6 }
        reader.cancel()
        let seen = sequences.withLock { $0 }
        #expect(seen.count >= 6)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $1 == $0 + 1 }, "sequences \(seen)")

        let unreachable = try netdevctl(["status", "--socket", "/run/netdevd-nowhere.sock"])
        #expect(unreachable.status == 69)
        #expect(unreachable.errors.contains("Is netdevd running?"))
        #expect(try netdevctl(["links", "--bogus"]).status == 2)
        // A first argument that is no command and no link, but close to a command: a mistyped command.
        let typo = try netdevctl(["lnks"] + socket)
        #expect(typo.status == 2 && typo.errors.contains("unknown command 'lnks'"), "\(typo.errors)")
        #expect(typo.errors.contains("did you mean 'netdevctl links'?"))
        // --json alone is --json=short; a name after it is the command's argument.
        let json = try netdevctl(["links", "--json", "l*"] + socket)
        #expect(json.status == 0 && json.output.hasPrefix("[{") && json.output.contains("\"name\":\"lo\""))
        // Reload says what it ignored; a file it cannot read makes it exit 1 with the reason.
        let dropIn = daemon.directory + "/netdevd.conf.d/50-typo.conf"
        try "[Online]\nRequiredInterface=eth0\n".write(toFile: dropIn, atomically: true, encoding: .utf8)
        let warned = try netdevctl(["reload"] + socket)
        #expect(warned.status == 0 && warned.errors.contains("did you mean 'RequiredInterfaces'?"), "\(warned)")
        try Data([0xFF, 0xFE]).write(to: URL(fileURLWithPath: dropIn))
        let rejected = try netdevctl(["reload"] + socket)
        #expect(rejected.status == 1 && rejected.errors.contains("is not UTF-8 text"), "\(rejected)")
        try FileManager.default.removeItem(atPath: dropIn)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test(
        "status LINK ends with the link's journal entries; log: netdevd's own about a link, -n, JSON, -f, a directory"
    )
    func journal() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let socket = ["--socket", daemon.socket]
        try ip("link", "add", "jl0", "type", "veth", "peer", "name", "jl1")
        defer { _ = try? ip("link", "del", "jl0") }
        // No IPv6 link-local addresses: jl0 settles at carrier, and the entries about it stop there.
        for name in ["jl0", "jl1"] { try ip("link", "set", name, "addrgenmode", "none") }
        try ip("link", "set", "jl0", "up")
        try ip("link", "set", "jl1", "up")
        // Another program's entry about the same link never shows.
        var impostor = JournalEntry(message: "impostor says jl0", priority: .notice)
        impostor.append(.normalizing("NETDEVD_IFNAME"), "jl0")
        try Journal(identifier: "impostor", target: .journal).send(impostor)
        #expect(
            waitUntil {
                (try? run("journalctl", "--no-pager", "-o", "cat", "SYSLOG_IDENTIFIER=impostor"))?.contains("jl0")
                    == true
            }, "the impostor's entry never reached the journal: its absence below would prove nothing")
        var log = (status: Int32(0), output: "", errors: "")
        #expect(
            waitUntil(timeout: 10) {
                log = (try? netdevctl(["log", "jl0"])) ?? log
                return log.output.contains("jl0: ") && log.output.contains("→ carrier")
            }, "no entries about jl0: \(log)")
        let lines = log.output.split(separator: "\n")
        #expect(log.status == 0 && !lines.isEmpty)
        #expect(lines.allSatisfy { $0.contains(" netdevd[\(daemon.process.processIdentifier)]: ") }, "\(log.output)")
        #expect(!log.output.contains("impostor"))
        #expect(!log.output.contains("jl1: "), "an entry about jl1 shows for jl0")

        let status = try netdevctl(["status", "jl0"] + socket)
        #expect(status.status == 0)
        let shown = status.output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(shown.first?.hasSuffix(": jl0") == true, "\(status.output)")
        let tail = Array(lines.suffix(10)).map(String.init)
        #expect(Array(shown.suffix(tail.count + 1).dropLast()).map(String.init) == tail, "\(status.output)")

        let one = try netdevctl(["log", "jl0", "-n", "1"])
        #expect(one.output.split(separator: "\n").map(String.init) == [String(lines.last!)])
        #expect(try netdevctl(["log", "jl0", "-n", "0"]).output == "-- No entries about 'jl0' --\n")
        let json = try netdevctl(["log", "jl0", "--json=short"])
        let objects = try jsonObjects(json.output)
        #expect(objects.count == lines.count)
        #expect(
            objects.allSatisfy { $0["NETDEVD_IFNAME"] as? String == "jl0" && $0["identifier"] as? String == "netdevd" })
        // Rotated (journald archives the file and starts another): the entries are still read, from the archive.
        let journald = try #require(BadDaysKernelTests.privateJournald(), "no private systemd-journald here")
        let archivesBefore = try run("sh", "-c", "ls /run/log/journal/*/").split(separator: "\n").count
        kill(journald, SIGUSR2)
        #expect(
            waitUntil {
                (try? run("sh", "-c", "ls /run/log/journal/*/").split(separator: "\n").count) ?? 0 > archivesBefore
            })
        #expect(try netdevctl(["log", "jl0"]).output.hasPrefix(log.output))
        // Every netdevd entry without a subject: the start's included.
        let all = try netdevctl(["log", "--since", "-1h"])
        #expect(all.output.contains("jl0") && all.output.contains("jl1"))

        let nothing = try netdevctl(["log", "nosuchlink"])
        #expect(nothing.status == 0 && nothing.output == "-- No entries about 'nosuchlink' --\n")
        let badTime = try netdevctl(["log", "jl0", "--since", "teatime"])
        #expect(badTime.status == 2 && badTime.errors.contains("'--since teatime' is not a time"))
        let refused = try netdevctl(["log", "jl0"], as: "65534")
        #expect(refused.status == 0 && refused.errors.contains("'systemd-journal' or 'adm' group"), "\(refused)")
        #expect(refused.output.isEmpty)
        let refusedStatus = try netdevctl(["status", "jl0"] + socket, as: "65534")
        #expect(refusedStatus.status == 0 && refusedStatus.output.contains("Type: veth"))
        #expect(refusedStatus.errors.contains("'systemd-journal' or 'adm' group"))
        #expect(try netdevctl(["log", ""]).status == 2)

        // The journal files themselves, as a central journal's directory would hold them.
        let directory = try netdevctl(["log", "jl0", "--directory", "/run/log/journal"])
        #expect(directory.status == 0 && directory.output.hasPrefix(log.output.prefix(log.output.count / 2)))
        let missing = try netdevctl(["log", "--directory", "/nonexistent/journal"])
        #expect(missing.status == 1 && missing.errors.contains("/nonexistent/journal is not a directory"))
        // A corrupted file (its second half overwritten, as a crash mid-write or a bad disk leaves it): what can be
        // read is, the rest is skipped or said; never a crash.
        let corrupted = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())").path
        try FileManager.default.createDirectory(atPath: corrupted, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: corrupted) }
        let files = try run("sh", "-c", "ls /run/log/journal/*/*.journal").split(separator: "\n").map(String.init)
        for (index, file) in files.enumerated() {
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
            for offset in stride(from: bytes.count / 2, to: bytes.count, by: 7) { bytes[offset] = 0xA5 }
            try Data(bytes).write(to: URL(fileURLWithPath: "\(corrupted)/system@\(index).journal"))
        }
        #expect(!files.isEmpty)
        let damaged = try netdevctl(["log", "jl0", "--directory", corrupted])
        #expect(
            damaged.status == 0 || (damaged.status == 1 && damaged.errors.hasPrefix("netdevctl: journal: ")),
            "\(damaged)")

        // -f: what comes after, as it comes.
        let follower = Process()
        follower.executableURL = URL(fileURLWithPath: RunningDaemon.built("netdevctl"))
        follower.arguments = ["log", "jl0", "-f", "-n", "1"]
        let pipe = Pipe()
        follower.standardOutput = pipe
        try follower.run()
        defer { if follower.isRunning { follower.terminate() } }
        let followed = Protected("")
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            followed.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        // The newest entry printed says it has read the journal and waits for more; only then the change.
        #expect(waitUntil(timeout: 10) { followed.withLock { $0 }.hasSuffix("\n") })
        try ip("link", "set", "jl0", "down")
        #expect(
            waitUntil(timeout: 10) { followed.withLock { $0 }.contains("jl0: carrier → off") },
            "-f printed: \(followed.withLock { $0 })")
        // The test's signal mask is inherited: -f must still end on SIGTERM (it unblocks what ends it).
        follower.terminate()
        follower.waitUntilExit()
        #expect(follower.terminationReason == .uncaughtSignal && follower.terminationStatus == SIGTERM)
        pipe.fileHandleForReading.readabilityHandler = nil
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}

/// A `netdevctl` that keeps running (`monitor`), its standard output collected in a file; stopped at deinit.
final class FollowingNetdevctl {
    let process = Process()
    let path = NSTemporaryDirectory() + "netdevctl-output-\(UInt32.random(in: 0...UInt32.max))"

    init(_ arguments: [String]) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        process.executableURL = URL(fileURLWithPath: RunningDaemon.built("netdevctl"))
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        process.environment = environment
        process.standardOutput = FileHandle(forWritingAtPath: path)
        try process.run()
    }

    /// The lines it printed so far (a line still being written is left out).
    var output: String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return String(text[..<(text.lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex)])
    }

    deinit {
        // SIGKILL: a child of the test runner starts with the runner thread's signals blocked, SIGTERM among them.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// `true` when the reference Python Varlink client can be imported (`pip install varlink`).
let pythonVarlinkAvailable = (try? run("python3", "-c", "import varlink")) != nil

@Suite(
    "io.netdevd from the reference Python Varlink client",
    .tags(.kernel), KernelHarness.enabled,
    .enabled(if: pythonVarlinkAvailable, "the reference Python Varlink client is not installed (pip install varlink)")
)
struct ReferenceClientTests {
    @Test("the reference client reads the interface description, calls GetState and ListLinks, and follows Monitor")
    func referenceClient() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let script = """
            import sys, varlink
            with varlink.Client(address="unix:" + sys.argv[1]) as client:
                with client.open("io.netdevd") as netdevd:
                    state = netdevd.GetState()
                    print("phase", state["state"]["phase"])
                    print("links", [link["name"] for link in netdevd.ListLinks("lo")["links"]])
                    for reply in netdevd.Monitor(_more=True):
                        print("monitor", reply["state"]["sequence"] > 0)
                        break
            # What the client's own checks would stop, sent as written: refused by name, as sd-varlink refuses it.
            for parameters in ('{"patern": "eth*"}', '{"pattern": 7}'):
                with client.open("io.netdevd") as netdevd:
                    netdevd._send_message(
                        ('{"method": "io.netdevd.ListLinks", "parameters": %s}' % parameters).encode())
                    try:
                        netdevd._next_varlink_message()
                        print("refused none")
                    except varlink.VarlinkError as error:
                        print("refused", error.error(), error.parameters()["parameter"])
            """
        let output = try run(["python3", "-c", script, daemon.socket])
        #expect(output.contains("phase running"))
        #expect(output.contains("links ['lo']"))
        #expect(output.contains("monitor True"))
        #expect(output.contains("refused org.varlink.service.InvalidParameter patern"), "\(output)")
        #expect(output.contains("refused org.varlink.service.InvalidParameter pattern"), "\(output)")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}

/// A Monitor client that only collects bytes while the measurement runs (so 100 of them cost the 2 cores little),
/// and decodes them afterwards: the sequence numbers, and the state rebuilt from the first state and the changes.
final class RawMonitor: Sendable {
    let fd: Int32
    private let received = Mutex<[UInt8]>([])

    /// Connects to `path` and calls `io.netdevd.Monitor` with `more`; a thread reads until the daemon closes.
    init(path: String, receiveBuffer: Int32? = nil) {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        _ = withUnixSocketAddress(path) { connect(fd, $0, $1) }
        let call = Array(#"{"method":"io.netdevd.Monitor","more":true}"#.utf8) + [0]
        _ = call.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads on a thread of its own until the daemon closes the connection; `done` is left when it has.
    func readUntilClosed(_ done: DispatchGroup) {
        done.enter()
        Thread.detachNewThread { [self] in
            defer { done.leave() }
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { return }
                received.withLock { $0 += buffer[0..<count] }
            }
        }
    }

    /// Whether a reply with `"sequence":N` has arrived (a byte search, no decoding).
    func hasSequence(_ sequence: Int) -> Bool {
        let needle = Data("\"sequence\":\(sequence),".utf8)
        return received.withLock { Data($0).range(of: needle) != nil }
    }

    /// Everything received so far, as text.
    var text: String { received.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The replies received so far, decoded: sequences in order and the state they rebuild.
    func decoded() -> (sequences: [Int], state: StateReport?) {
        var sequences: [Int] = []
        var state: StateReport?
        let messages = received.withLock { $0 }.split(separator: 0)
        for message in messages {
            guard let reply = try? JSONDecoder().decode(VarlinkReply.self, from: Data(message)) else {
                sequences.append(-1)
                continue
            }
            if let first = try? reply.parameters["state"]?.decode(as: StateReport.self) {
                sequences.append(first.sequence)
                state = first
            } else if let change = try? reply.parameters["change"]?.decode(as: ChangeReport.self) {
                sequences.append(change.sequence)
                state = state?.applying(change)
            } else {
                sequences.append(-1)
            }
        }
        return (sequences, state)
    }
}

/// The CPU time (user + system) `pid` has used, in seconds, from /proc.
func cpuSeconds(of pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return 0 }
    // After "pid (comm) ": state is field 3, utime 14 and stime 15.
    let fields = stat[stat.index(end, offsetBy: 2)...].split(separator: " ")
    let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}

@Suite("io.netdevd under many monitors", .serialized, .tags(.kernel), KernelHarness.enabled)
struct ManyMonitorsTests {
    /// Creates, raises and deletes `pairs` veth pairs, then waits until netdevd lists only `lo` again; returns the
    /// seconds that took and the CPU seconds netdevd spent.
    func burst(_ daemon: RunningDaemon, pairs: Int, prefix: String) throws -> (seconds: Double, cpu: Double) {
        let cpuBefore = cpuSeconds(of: daemon.process.processIdentifier)
        let started = Date()
        try ipBatch((0..<pairs).map { "link add \(prefix)\($0)a type veth peer name \(prefix)\($0)b" })
        try ipBatch((0..<pairs).map { "link set \(prefix)\($0)a up" })
        try ipBatch((0..<pairs).map { "link del \(prefix)\($0)a" })
        _ = waitUntil(timeout: 60) {
            let linkCount = (try? netdevctl(["--json=short", "links", "--socket", daemon.socket]))
                .flatMap { try? JSONSerialization.jsonObject(with: Data($0.output.utf8)) as? [Any] }?.count
            return linkCount == 1
        }
        return (Date().timeIntervalSince(started), cpuSeconds(of: daemon.process.processIdentifier) - cpuBefore)
    }

    @Test("100 monitors and one that never reads: the stuck one is dropped, the others rebuild every state in order")
    func hundredMonitors() throws {
        // A small pending-output limit, so the stuck client trips it once the kernel's socket buffer is full.
        let daemon = try RunningDaemon(extraArguments: ["--monitor-buffer", "16384"])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let pairs = 50
        let alone = try burst(daemon, pairs: pairs, prefix: "solo")

        let readers = DispatchGroup()
        let monitors = (0..<100).map { _ in RawMonitor(path: daemon.socket) }
        for monitor in monitors { monitor.readUntilClosed(readers) }
        // The stuck client: subscribes with a tiny receive buffer and never reads.
        let stuck = RawMonitor(path: daemon.socket, receiveBuffer: 4096)
        defer { close(stuck.fd) }
        _ = waitUntil { monitors.allSatisfy { $0.text.contains("\"state\"") } }

        let watched = try burst(daemon, pairs: pairs, prefix: "many")
        // Settled: udev's remove events may still arrive after the links are gone, so the final state is the one
        // that stays the same for half a second.
        let state = {
            try? VarlinkClient(path: daemon.socket).call("io.netdevd.GetState")["state"]?.decode(as: StateReport.self)
        }
        var final = state()
        _ = waitUntil(timeout: 30) {
            usleep(500_000)
            let now = state()
            defer { final = now }
            return now != nil && now == final
        }
        let last = final?.sequence ?? 0
        let delivered = waitUntil(timeout: 60) { monitors.allSatisfy { $0.hasSequence(last) } }
        print(
            String(
                format: "%d veth pairs added, raised, deleted: %.2f s and %.2f CPU s alone, %.2f s and %.2f CPU s"
                    + " with 100 monitors (%d changes to each)",
                pairs, alone.seconds, alone.cpu, watched.seconds, watched.cpu, last))
        #expect(delivered, "not every monitor received change \(last)")
        let devices = try VarlinkClient(path: daemon.socket).call("io.netdevd.ListDevices")["devices"]?.decode(
            as: [DeviceReport].self)
        for (index, monitor) in monitors.enumerated() {
            let (sequences, state) = monitor.decoded()
            #expect(
                zip(sequences, sequences.dropFirst()).allSatisfy { $1 == $0 + 1 },
                "monitor \(index) skipped: \(sequences.prefix(20))")
            // GetState leaves the devices out; the monitor's devices are ListDevices'.
            var links = state
            links?.devices = nil
            #expect(links == final, "monitor \(index) rebuilt a different state")
            #expect(state?.devices == devices, "monitor \(index) rebuilt different devices")
        }
        #expect(last > 100, "\(last) changes")
        // A sanity bound, not a benchmark: the figures printed above are the measurement.
        #expect(watched.seconds < 30, "the daemon took \(watched.seconds) s to reflect the changes with 101 monitors")

        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var received: [UInt8] = []
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(stuck.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var closed = false
        while true {
            let count = recv(stuck.fd, &buffer, buffer.count, 0)
            if count == 0 { closed = true }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        // Dropped either way: its replies outgrew the limit (it is told io.netdevd.ClientTooSlow), or, on a loaded
        // machine where the burst starts late, it read nothing for the idle limit first (closed without a word).
        #expect(closed, "the stuck monitor's connection is still open")
        let said = try run("journalctl", "--no-pager", "-o", "cat", "_PID=\(daemon.process.processIdentifier)")
        let tooSlow = String(decoding: received, as: UTF8.self).contains("io.netdevd.ClientTooSlow")
        #expect(
            tooSlow ? said.contains("io.netdevd.ClientTooSlow") : said.contains("read none of its replies"),
            "no journal line says why the stuck monitor was closed")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
        readers.wait()
        for monitor in monitors { close(monitor.fd) }
    }
}

@Suite("netdevctl without a daemon")
struct NetdevctlUsageTests {
    @Test("`netdevctl help links` shows the help of links; options before a command still apply to it")
    func helpAndGlobalOptions() throws {
        let help = try netdevctl(["help", "links"])
        #expect(help.status == 0)
        #expect(help.output.contains("USAGE: netdevctl links"), "\(help.output)\(help.errors)")
        let early = try netdevctl(["--json=short", "links", "--socket", "/nonexistent/io.netdevd"])
        #expect(early.status == 69)
        #expect(early.errors.contains("cannot connect to /nonexistent/io.netdevd"))
    }
}
