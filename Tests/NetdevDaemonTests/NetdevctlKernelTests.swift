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
        // Both ends' removals: udev reports them one after the other, and netdevd may read the second up to its
        // hold-off later.
        _ = waitUntil { ["md2", "md1"].allSatisfy { lines.output.contains("net device \($0) removed") } }
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
