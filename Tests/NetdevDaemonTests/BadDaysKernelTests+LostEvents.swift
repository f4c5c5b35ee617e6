import Foundation
import KernelTestSupport
import NetdevSession
import NetdevWire
import Testing
import Udev
import Varlink

extension BadDaysKernelTests {
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

    @Test("a start while the kernel keeps changing addresses: ready at once, reads again, then equals the kernel")
    func startWhileAddressesChange() throws {
        try ipBatch([
            "link add ch0 type veth peer name ch0p", "link add ch1 type veth peer name ch1p", "link set ch0 up",
            "link set ch0p up",
        ])
        defer { _ = try? ipBatch(["link del ch0", "link del ch1"]) }
        // 4,000 addresses take an address dump several reads; another link's address comes and goes meanwhile,
        // thousands of times a second, so each of a start's tries is interrupted.
        try ipBatch((0..<4_000).map { "addr add 10.\($0 / 250).\($0 % 250).1/32 dev ch0" })
        let churn = try AddressChurn(link: "ch1")
        defer { churn.stop() }
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil, "not ready while an address kept changing")
        let kept = try journal(of: daemon, "MESSAGE_ID", MessageKind.changedWhileRead.id) { !$0.isEmpty }
        #expect(churn.isRunning)
        churn.stop()
        #expect(!kept.isEmpty, "no reading was kept while the kernel changed it")
        // Once the kernel is quiet, the next reading is consistent (within 30 s, the longest wait) and equal to it.
        let again = try journal(of: daemon, "MESSAGE_ID", MessageKind.reread.id) { $0.count >= kept.count }
        var last: (known: [String], actual: [String]) = ([], [])
        let converged = waitUntil(timeout: 40) {
            guard let known = Self.known(daemon), let actual = try? Self.actual(subsystems: []) else { return false }
            last = (known.links + known.addresses, actual.links + actual.addresses)
            return last.known == last.actual
        }
        let failed = try run(
            "journalctl", "--no-pager", "--all", "-o", "cat", "_PID=\(daemon.process.processIdentifier)",
            "MESSAGE_ID=\(MessageKind.enumerationFailed.id)")
        print("startWhileAddressesChange: \(kept.count) readings kept, \(again.count) read again; equal: \(converged)")
        #expect(failed.isEmpty, "a reading failed: \(failed)")
        let onlyKnown = Set(last.known).subtracting(last.actual).sorted().prefix(10)
        let onlyActual = Set(last.actual).subtracting(last.known).sorted().prefix(10)
        #expect(converged, "drift: netdevd only \(onlyKnown), the kernel only \(onlyActual)")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}
