import Foundation
import KernelTestSupport
import NetdevSession
import NetdevWire
import Testing
import Udev
import Varlink

extension BadDaysKernelTests {

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
}
