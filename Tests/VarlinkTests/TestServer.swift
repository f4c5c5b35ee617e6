import Foundation
import KernelTestSupport
import Testing
import Varlink

/// A server on a fresh socket path with a small test interface, and raw connections to it.
final class TestServer {
    let path = NSTemporaryDirectory() + "varlink-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
    let server: VarlinkServer
    let ticks = Ticks()
    let notices = Protected<[VarlinkNotice]>([])
    /// How many times the server said a connection wrote out a backlog.
    let drains = Protected(0)

    init(limits: VarlinkLimits = VarlinkLimits()) throws {
        let ticks = self.ticks
        let interface = VarlinkInterface(
            name: "org.example.test",
            description: "interface org.example.test\nmethod Echo(text: string) -> (text: string)\n",
            methods: [
                "Echo": { call, peer, replier in
                    guard let text = call.parameters["text"]?.stringValue else {
                        replier.error(VarlinkStandardError.invalidParameter, ["parameter": .string("text")])
                        return
                    }
                    replier.reply(["text": .string(text), "uid": .number(Double(peer.uid))])
                },
                "Empty": { _, _, replier in replier.reply([:]) },
                "Ticks": { call, _, replier in
                    guard call.more else { return replier.error(VarlinkStandardError.expectedMore) }
                    ticks.add(replier)
                    replier.reply(["n": .number(0)], continues: true)
                },
            ]
        )
        server = VarlinkServer(
            listening: try VarlinkServer.listen(on: path), interfaces: [interface], vendor: "test", product: "test",
            version: "1", url: "https://example.org", limits: limits,
            drained: { [drains] in drains.withLock { $0 += 1 } }
        ) { [notices] notice in notices.withLock { $0.append(notice) } }
        server.start()
    }

    /// Sends a tick to every monitor.
    func tick(_ n: Int, continues: Bool = true) {
        for replier in ticks.all {
            replier.reply(
                ["n": .number(Double(n)), "padding": .string(String(repeating: "x", count: 1000))], continues: continues
            )
        }
    }

    /// The notices' messages so far.
    var noticeMessages: [String] {
        notices.withLock { $0.map(\.message) }
    }

    deinit {
        server.stop()
        unlink(path)
    }
}

/// The repliers of open `Ticks` calls.
final class Ticks: Sendable {
    private let repliers = Protected<[VarlinkReplier]>([])

    func add(_ replier: VarlinkReplier) {
        repliers.withLock { $0.append(replier) }
    }

    var all: [VarlinkReplier] {
        repliers.withLock { $0 }
    }
}

/// A raw socket to write arbitrary bytes.
final class RawConnection {
    let fd: Int32

    init(_ path: String) {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        _ = withUnixSocketAddress(path) { connect(fd, $0, $1) }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func write(_ text: String, terminated: Bool = true) {
        let bytes = Array(text.utf8) + (terminated ? [0] : [])
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Writes `chunk` over and over without blocking until `total` bytes are written or the socket stays full for
    /// half a second; a chunk written in part is finished before the next starts, so messages stay whole. Returns
    /// the bytes written. Leaves the socket blocking again.
    func push(_ chunk: [UInt8], total: Int) -> Int {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        var written = 0
        while written < total {
            let offset = written % chunk.count
            let count = chunk[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                written += count
                continue
            }
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&ready, 1, 500) == 0 { break }
        }
        return written
    }

    /// The next `count` replies (NUL-terminated messages), as text; fewer if 3 s pass without a byte.
    func read(replies count: Int) -> [String] {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var ended = 0
        while ended < count {
            let received = recv(fd, &chunk, chunk.count, 0)
            guard received > 0 else { break }
            ended += chunk[0..<received].lazy.filter { $0 == 0 }.count
            collected += chunk[0..<received]
        }
        return collected.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Everything until the peer closes (or 3 s pass).
    func readToClose() -> (text: String, closed: Bool) {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count == 0 { return (String(decoding: collected, as: UTF8.self), true) }
            if count < 0 {
                // ECONNRESET: the server closed with our bytes unread, which is a close too.
                return (String(decoding: collected, as: UTF8.self), errno == ECONNRESET)
            }
            collected += chunk[0..<count]
        }
    }

    deinit {
        close(fd)
    }
}
