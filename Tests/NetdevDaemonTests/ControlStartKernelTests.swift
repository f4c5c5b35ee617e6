import Foundation
import KernelTestSupport
import NetdevWire
import Testing
import Varlink

/// What a boot script meets when it queries netdevd the moment its socket appears (socket activation starts
/// netdevd for its first query): every answer comes from the finished enumeration.
@Suite("io.netdevd at start-up", .serialized, .tags(.kernel), KernelHarness.enabled)
struct ControlStartKernelTests {
    @Test("50 starts with 200 links: ListLinks, GetState and ListDevices made as the socket appears never list fewer")
    func queriesAtStart() throws {
        let pairs = 100
        defer { for index in 0..<pairs { _ = try? ip("link", "del", "cs\(index)a") } }
        try ipBatch((0..<pairs).map { "link add cs\($0)a type veth peer name cs\($0)b" })
        _ = try? run("udevadm", "settle", "-t", "20")
        let links = try kernelLinksAndAddresses().links.count
        #expect(links >= 2 * pairs + 1)
        var short: [String] = []
        for start in 1...50 {
            let daemon = try RunningDaemon()
            // As soon as the socket exists, three clients at once.
            #expect(waitUntil(timeout: 10) { access(daemon.socket, F_OK) == 0 }, "start \(start): no socket")
            let counts = Protected<[String: Int]>([:])
            let group = DispatchGroup()
            let socket = daemon.socket
            for method in ["ListLinks", "GetState", "ListDevices"] {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    let count = Self.count(method, at: socket)
                    counts.withLock { $0[method] = count }
                }
            }
            #expect(group.wait(timeout: .now() + 30) == .success, "start \(start): a query was not answered")
            for (method, count) in counts.withLock({ $0 }).sorted(by: { $0.key < $1.key }) where count < links {
                short.append("start \(start): \(method) listed \(count) of \(links)")
            }
            daemon.signal(SIGTERM)
            #expect(daemon.exitStatus() == 0)
        }
        #expect(short.isEmpty, "\(short.count) short answers: \(short.prefix(5))")
    }

    /// How many links (ListLinks, GetState) or net devices (ListDevices) `method` lists; -1 when it failed.
    static func count(_ method: String, at socket: String) -> Int {
        // The socket exists before netdevd listens on it (bind, then listen): a refused connection is tried again.
        var client: VarlinkClient?
        _ = waitUntil(timeout: 10) {
            client = try? VarlinkClient(path: socket)
            return client != nil
        }
        guard let client else { return -1 }
        let parameters: [String: JSONValue] = method == "ListDevices" ? ["subsystem": .string("net")] : [:]
        guard let reply = try? client.call("io.netdevd." + method, parameters) else { return -1 }
        switch method {
        case "ListLinks": return (try? reply["links"]?.decode(as: [LinkReport].self))?.count ?? -1
        case "GetState": return (try? reply["state"]?.decode(as: StateReport.self))?.links.count ?? -1
        default: return (try? reply["devices"]?.decode(as: [DeviceReport].self))?.count ?? -1
        }
    }
}
