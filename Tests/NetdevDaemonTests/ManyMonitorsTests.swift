import Foundation
import KernelTestSupport
import Locking
import NetdevDaemon
import NetdevSession
import NetdevWire
import Systemd
import Testing
import Varlink

/// A Monitor client that only collects bytes while the measurement runs (so 100 of them cost the 2 cores little),
/// and decodes them afterwards: the sequence numbers, and the state rebuilt from the first state and the changes.
final class RawMonitor: Sendable {
    let fd: Int32
    /// Behind ``Locked`` (a pthread mutex) rather than `Synchronization.Mutex`, whose futex ThreadSanitizer does not
    /// see as synchronization: the send-interval test runs under it.
    private let received = Locked<[UInt8]>([])
    /// How many reads returned bytes (a write the daemon made may be read in more than one).
    private let reads = Locked(0)

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
                reads.withLock { $0 += 1 }
            }
        }
    }

    /// Whether a reply with `"sequence":N` has arrived (a byte search, no decoding).
    func hasSequence(_ sequence: Int) -> Bool {
        let needle = Data("\"sequence\":\(sequence),".utf8)
        return received.withLock { Data($0).range(of: needle) != nil }
    }

    /// How many reads have returned bytes so far.
    var readCount: Int { reads.withLock { $0 } }

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
        // Told either way: its replies outgrew the limit, or, on a loaded machine where the burst starts late, it
        // read nothing for the idle limit first.
        #expect(closed, "the stuck monitor's connection is still open")
        let said = try run("journalctl", "--no-pager", "-o", "cat", "_PID=\(daemon.process.processIdentifier)")
        #expect(
            String(decoding: received, as: UTF8.self).contains("io.netdevd.ClientTooSlow"),
            "the stuck monitor was not told why it was closed")
        #expect(said.contains("(io.netdevd.ClientTooSlow)"), "no journal line says why the stuck monitor was closed")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus(timeout: 20) == 0)
        readers.wait()
        for monitor in monitors { close(monitor.fd) }
    }
}
