import Foundation
import KernelTestSupport
import NetdevSession
import Synchronization
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

@Suite("netdevctl against netdevd", .serialized, .enabled(if: KernelHarness.isActive, KernelHarness.skipReason))
struct NetdevctlKernelTests {
    @Test("status, links, link and devices, as tables and as JSON")
    func queries() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ip("link", "add", "ctl0", "type", "veth", "peer", "name", "ctl1")
        defer { _ = try? ip("link", "del", "ctl0") }
        try ip("link", "set", "ctl0", "up")
        try ip("link", "set", "ctl1", "up")
        try ip("addr", "add", "192.0.2.44/24", "dev", "ctl0")
        let socket = ["--socket", daemon.socket]
        _ = waitUntil { (try? netdevctl(["link", "ctl0"] + socket))?.output.contains("routable") == true }
        let status = try netdevctl(["status"] + socket)
        #expect(status.status == 0)
        #expect(status.output.contains("Online state: online"))
        let header = status.output.split(separator: "\n").first { $0.hasPrefix("IDX") }
        #expect(header?.split(separator: " ") == ["IDX", "LINK", "TYPE", "OPERATIONAL"])
        #expect(status.output.contains("192.0.2.44/24"))
        let links = try netdevctl(["links", "ctl*", "--no-legend"] + socket)
        // Rows are "IDX LINK TYPE OPERATIONAL"; ctl1 has only a link-local address (degraded) or none yet (carrier).
        let rows = Dictionary(
            uniqueKeysWithValues: links.output.split(separator: "\n").map { row in
                let columns = row.split(separator: " ").map(String.init)
                return (columns[1], columns.dropFirst(2).joined(separator: " "))
            })
        #expect(rows.count == 2)
        #expect(rows["ctl0"] == "veth routable")
        #expect(rows["ctl1"] == "veth carrier" || rows["ctl1"] == "veth degraded")
        let link = try netdevctl(["link", "ctl0"] + socket)
        #expect(link.output.contains("Operational: routable") && link.output.contains("Address: 192.0.2.44/24"))
        let json = try netdevctl(["--json=short", "links", "ctl0"] + socket)
        let decoded = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]]
        #expect(decoded?.first?["name"] as? String == "ctl0")
        #expect(decoded?.first?["operationalState"] as? String == "routable")
        let devices = try netdevctl(["devices", "--subsystem", "net"] + socket)
        #expect(devices.output.contains("net       ctl0"))
        let missing = try netdevctl(["link", "nosuch0"] + socket)
        #expect(missing.status == 1 && missing.errors.contains("no link named 'nosuch0'"))
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("wait-online returns when the link is ready, and on timeout names what is missing (exit 3)")
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
        #expect(Date().timeIntervalSince(started) < 8)
        let timedOut = try netdevctl(
            ["wait-online", "--interface", "wo1:routable", "--interface", "absent0", "--timeout", "500ms"] + socket)
        #expect(timedOut.status == 3)
        #expect(timedOut.errors.contains("absent0: no such link yet (needs routable)"))
        #expect(timedOut.errors.contains("wo1:") && timedOut.errors.contains("needs routable"))
        let any = try netdevctl(
            ["wait-online", "--any", "--interface", "wo1", "--interface", "wo0", "--timeout", "2s"] + socket)
        #expect(any.status == 0)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    @Test("reload: root may, others get PermissionDenied; monitor follows changes; unreachable is exit 4, usage exit 2")
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
                let sequence = Int(reply["state"]?["sequence"]?.numberValue ?? -1)
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
        #expect(unreachable.status == 4)
        #expect(unreachable.errors.contains("Is netdevd running?"))
        #expect(try netdevctl(["links", "--bogus"]).status == 2)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}

/// `true` when the reference Python Varlink client can be imported (`pip install varlink`).
let pythonVarlinkAvailable = (try? run("python3", "-c", "import varlink")) != nil

@Suite(
    "io.netdevd from the reference Python Varlink client",
    .enabled(if: KernelHarness.isActive, KernelHarness.skipReason),
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
            """
        let output = try run(["python3", "-c", script, daemon.socket])
        #expect(output.contains("phase running"))
        #expect(output.contains("links ['lo']"))
        #expect(output.contains("monitor True"))
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}

/// The sequence numbers one monitor saw.
final class SequenceLog: Sendable {
    private let values = Mutex<[Int]>([])

    func withLock<Result>(_ body: (inout [Int]) -> Result) -> Result {
        values.withLock { body(&$0) }
    }
}

@Suite("io.netdevd under many monitors", .serialized, .enabled(if: KernelHarness.isActive, KernelHarness.skipReason))
struct ManyMonitorsTests {
    @Test("100 monitors and one that never reads: the stuck one is dropped, the others see every change in order")
    func hundredMonitors() throws {
        // A small pending-output limit, so the stuck client trips it within a few dozen changes.
        let daemon = try RunningDaemon(extraArguments: ["--monitor-buffer", "65536"])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let sequences = (0..<100).map { _ in SequenceLog() }
        let finished = DispatchGroup()
        for index in 0..<100 {
            finished.enter()
            let path = daemon.socket
            Thread.detachNewThread {
                defer { finished.leave() }
                guard let client = try? VarlinkClient(path: path) else { return }
                try? client.callWithMore("io.netdevd.Monitor") { reply in
                    let sequence = Int(reply["state"]?["sequence"]?.numberValue ?? -1)
                    let phase = reply["state"]?["phase"]?.stringValue
                    sequences[index].withLock { $0.append(sequence) }
                    return phase != "stopping"
                }
            }
        }
        // The stuck client: subscribes with a tiny receive buffer and never reads.
        let stuck = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(stuck) }
        var size: Int32 = 4096
        setsockopt(stuck, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in daemon.socket.utf8.enumerated() { raw[index] = byte }
        }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(stuck, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        let call = Array(#"{"method":"io.netdevd.Monitor","more":true}"#.utf8) + [0]
        _ = call.withUnsafeBytes { send(stuck, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        _ = waitUntil { sequences.allSatisfy { !$0.withLock { $0.isEmpty } } }

        let started = Date()
        try ipBatch((0..<10).map { "link add many\($0)a type veth peer name many\($0)b" })
        try ipBatch((0..<10).map { "link set many\($0)a up" })
        try ipBatch((0..<10).map { "link del many\($0)a" })
        let lastSequence = { sequences.map { $0.withLock { $0.last ?? 0 } }.max() ?? 0 }
        _ = waitUntil(timeout: 30) {
            let linkCount = (try? netdevctl(["--json=short", "links", "--socket", daemon.socket]))
                .flatMap { try? JSONSerialization.jsonObject(with: Data($0.output.utf8)) as? [Any] }?.count
            return linkCount == 1
        }
        let settled = Date().timeIntervalSince(started)
        _ = waitUntil { sequences.allSatisfy { $0.withLock { $0.last } == lastSequence() } }
        for (index, seen) in sequences.enumerated() {
            let values = seen.withLock { $0 }
            #expect(
                zip(values, values.dropFirst()).allSatisfy { $1 == $0 + 1 },
                "monitor \(index) skipped: \(values.prefix(20))")
        }
        #expect(lastSequence() > 20, "\(lastSequence()) changes seen")
        #expect(settled < 20, "the daemon took \(settled) s to reflect the changes with 101 monitors")
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var received: [UInt8] = []
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(stuck, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let count = recv(stuck, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        #expect(String(decoding: received, as: UTF8.self).contains("io.netdevd.ClientTooSlow"))
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
        finished.wait()
    }
}
