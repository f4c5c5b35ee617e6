import Foundation
import KernelTestSupport
import Testing
import Varlink

@Suite("Varlink protocol", .serialized)
struct ProtocolTests {
    @Test("calls with omitted, null or empty parameters; replies to the method; the org.varlink.service methods")
    func basics() throws {
        let server = try TestServer()
        let client = try VarlinkClient(path: server.path)
        #expect(try client.call("org.example.test.Echo", ["text": .string("hi")])["text"] == .string("hi"))
        #expect(try client.call("org.example.test.Empty") == [:])
        let raw = RawConnection(server.path)
        raw.write(#"{"method":"org.example.test.Empty","parameters":null}"#)
        raw.write(#"{"method":"org.example.test.Empty","parameters":{}}"#)
        raw.write(#"{"method":"org.example.test.Empty","oneway":true}"#)
        raw.write(#"{"method":"org.example.test.Echo","parameters":{"text":"last"}}"#)
        shutdown(raw.fd, Int32(SHUT_WR))
        let replies = raw.readToClose().text.split(separator: "\0")
        #expect(replies.count == 3)
        #expect(replies.last?.contains(#""text":"last""#) == true)
        let info = try client.call("org.varlink.service.GetInfo")
        #expect(info["interfaces"] == .array([.string("org.varlink.service"), .string("org.example.test")]))
        let description = try client.call(
            "org.varlink.service.GetInterfaceDescription", ["interface": .string("org.example.test")])
        #expect(description["description"]?.stringValue?.hasPrefix("interface org.example.test") == true)
    }

    @Test("unknown interface or method, and wrong parameter types, get the standard errors")
    func standardErrors() throws {
        let server = try TestServer()
        let client = try VarlinkClient(path: server.path)
        #expect(
            throws: VarlinkClientError.error(
                name: VarlinkStandardError.interfaceNotFound, parameters: ["interface": .string("org.example.nope")])
        ) {
            try client.call("org.example.nope.Echo")
        }
        #expect(
            throws: VarlinkClientError.error(
                name: VarlinkStandardError.methodNotFound, parameters: ["method": .string("org.example.test.Nope")])
        ) {
            try client.call("org.example.test.Nope")
        }
        #expect(
            throws: VarlinkClientError.error(
                name: VarlinkStandardError.invalidParameter, parameters: ["parameter": .string("text")])
        ) {
            try client.call("org.example.test.Echo", ["text": .number(3)])
        }
        #expect(
            throws: VarlinkClientError.error(
                name: VarlinkStandardError.interfaceNotFound, parameters: ["interface": .string("org.example.nope")])
        ) {
            try client.call("org.varlink.service.GetInterfaceDescription", ["interface": .string("org.example.nope")])
        }
        // An empty segment is part of the name as written (a fuzzer found "io..netdevd.Monitor" served as Monitor).
        #expect(
            throws: VarlinkClientError.error(
                name: VarlinkStandardError.interfaceNotFound, parameters: ["interface": .string("org..example.test")])
        ) {
            try client.call("org..example.test.Echo", ["text": .string("x")])
        }
        #expect(
            try client.call("org.example.test.Echo", ["text": .string("still served")])["text"]
                == .string("still served"))
    }

    @Test("invalid JSON, a message over the limit, and a client gone mid-message close only their connection")
    func badClients() throws {
        var limits = VarlinkLimits()
        limits.maximumMessageBytes = 1024
        let server = try TestServer(limits: limits)
        let good = try VarlinkClient(path: server.path)
        let invalid = RawConnection(server.path)
        invalid.write("{not json")
        #expect(invalid.readToClose() == ("", true))
        let huge = RawConnection(server.path)
        huge.write(String(repeating: "a", count: 4096), terminated: false)
        #expect(huge.readToClose().closed)
        let partial = RawConnection(server.path)
        partial.write(#"{"method":"org.example.test.Em"#, terminated: false)
        close(partial.fd)
        #expect(try good.call("org.example.test.Echo", ["text": .string("fine")])["text"] == .string("fine"))
        #expect(try VarlinkClient(path: server.path).call("org.example.test.Empty") == [:])
    }

    @Test("a call with more gets every reply in order until the last")
    func more() throws {
        let server = try TestServer()
        let (received, done) = Self.followTicks(server)
        server.tick(1)
        server.tick(2)
        server.tick(3, continues: false)
        #expect(done.wait(timeout: .now() + 3) == .success)
        #expect(received.withLock { $0 } == [0, 1, 2, 3])
    }

    @Test("replies sent together reach the client as separate replies, in order, then the last")
    func repliesTogether() throws {
        let server = try TestServer()
        let (received, done) = Self.followTicks(server)
        let replier = try #require(server.ticks.all.first)
        replier.reply(continuingWith: (1...3).map { Array(#"{"n":\#($0)}"#.utf8) })
        replier.reply(continuingWith: [])
        replier.reply(continuingWith: [Array(#"{"n":4}"#.utf8)])
        server.tick(5, continues: false)
        replier.reply(continuingWith: [Array(#"{"n":6}"#.utf8), Array(#"{"n":7}"#.utf8)])
        #expect(done.wait(timeout: .now() + 3) == .success)
        #expect(received.withLock { $0 } == [0, 1, 2, 3, 4, 5], "nothing after the last reply")
    }

    /// A client on a thread of its own that calls `Ticks` and keeps each reply's `n` (-1 for none); `done` is
    /// signalled when the call ends. Returns once the server has the call.
    static func followTicks(_ server: TestServer) -> (received: Protected<[Double]>, done: DispatchSemaphore) {
        let received = Protected<[Double]>([])
        let done = DispatchSemaphore(value: 0)
        let path = server.path
        Thread.detachNewThread {
            let client = try? VarlinkClient(path: path)
            try? client?.callWithMore("org.example.test.Ticks") { reply in
                received.withLock { $0.append(reply["n"]?.numberValue ?? -1) }
                return true
            }
            done.signal()
        }
        for _ in 0..<100 where server.ticks.all.isEmpty { usleep(10_000) }
        return (received, done)
    }

    /// A client with a 4 KiB receive buffer subscribed to `Ticks`, which reads none of its replies.
    static func subscribeReadingNothing(_ server: TestServer) -> RawConnection {
        let slow = RawConnection(server.path)
        var size: Int32 = 4096
        setsockopt(slow.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        slow.write(#"{"method":"org.example.test.Ticks","more":true}"#)
        for _ in 0..<100 where server.ticks.all.isEmpty { usleep(10_000) }
        return slow
    }

    @Test("a monitor that does not read gets a bounded buffer, then an error and a close; others are served")
    func slowReader() throws {
        var limits = VarlinkLimits()
        limits.maximumPendingOutputBytes = 64 * 1024
        let server = try TestServer(limits: limits)
        let slow = Self.subscribeReadingNothing(server)
        for n in 1...2_000 { server.tick(n) }
        usleep(200_000)
        #expect(try VarlinkClient(path: server.path).call("org.example.test.Empty") == [:])
        let (text, closed) = slow.readToClose()
        #expect(closed)
        let read = Self.ticksAndError(text)
        #expect(read?.error == "org.example.test.ClientTooSlow", "\(text.suffix(200))")
        // The replies not begun when it was cut off are dropped, the one begun is finished: whole messages, in order.
        #expect(read.map { $0.ticks == Array(0..<$0.ticks.count) } == true, "\(read?.ticks ?? [])")
        #expect((read?.ticks.count ?? 0) < 2_000)
        #expect(server.ticks.all.first?.isCancelled == true)
    }

    /// The `n` of each `Ticks` reply in `text` and the error its last message names, or `nil` if a message is not
    /// whole JSON.
    static func ticksAndError(_ text: String) -> (ticks: [Int], error: String?)? {
        var ticks: [Int] = []
        var error: String?
        for message in text.split(separator: "\0") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any] else {
                return nil
            }
            if let n = (object["parameters"] as? [String: Any])?["n"] as? Int { ticks.append(n) }
            error = object["error"] as? String
        }
        return (ticks, error)
    }

    @Test("connections over the per-user limit are closed at once")
    func connectionLimit() throws {
        var limits = VarlinkLimits()
        limits.maximumConnectionsPerUser = 2
        limits.maximumRootConnections = 2
        let server = try TestServer(limits: limits)
        let first = try VarlinkClient(path: server.path)
        let second = try VarlinkClient(path: server.path)
        #expect(try first.call("org.example.test.Empty") == [:])
        #expect(try second.call("org.example.test.Empty") == [:])
        let third = RawConnection(server.path)
        third.write(#"{"method":"org.example.test.Empty"}"#)
        #expect(third.readToClose().closed)
    }

    @Test("the connection limits: root's apart, per uid and overall for other users; each refusal is answered and said")
    func perUserLimit() throws {
        var limits = VarlinkLimits()
        limits.maximumConnections = 1
        limits.maximumConnectionsPerUser = 3
        limits.maximumRootConnections = 3
        let server = try TestServer(limits: limits)
        let clients = try (0..<3).map { _ in try VarlinkClient(path: server.path) }
        if getuid() == 0 {
            // Root is not held to the overall limit of 1: all three are served.
            for client in clients { #expect(try client.call("org.example.test.Empty") == [:]) }
        } else {
            print("VarlinkTests.perUserLimit: not root, so the overall limit applies (root's exemption not tested)")
            #expect(try clients[0].call("org.example.test.Empty") == [:])
        }
        for _ in 0..<3 {
            let refused = RawConnection(server.path)
            refused.write(#"{"method":"org.example.test.Empty"}"#)
            let (text, closed) = refused.readToClose()
            #expect(closed)
            #expect(text.contains(#""error":"org.example.test.TooManyConnections""#), "\(text)")
            let reason =
                getuid() == 0
                ? "root already has 3 connections open (root's limit)"
                : "1 connections of users other than root are open (their limit; root still has room)"
            #expect(text.contains(reason), "\(text)")
        }
        // Said once, with the refusals held back counted in the next one said (10 s later at the earliest).
        let said = server.noticeMessages.filter { $0.hasPrefix("Refused a control connection from pid ") }
        #expect(said.count == 1)
        #expect(said.first?.contains("(uid \(getuid()))") == true)
        withExtendedLifetime(clients) {}
    }

    @Test("a client that pipelines without reading is read no further than the pending-call limit; nothing is lost")
    func pipelining() throws {
        var limits = VarlinkLimits()
        limits.maximumPendingCalls = 8
        let server = try TestServer(limits: limits)
        let client = RawConnection(server.path)
        client.write(#"{"method":"org.example.test.Ticks","more":true}"#)
        for _ in 0..<100 where server.ticks.all.isEmpty { usleep(10_000) }
        // 100 MB of calls behind a call that never ends, written until the socket stays full for half a second.
        let call = Array(#"{"method":"org.example.test.Empty"}"#.utf8) + [0]
        let chunk = Array([[UInt8]](repeating: call, count: 65536 / call.count).joined())
        let written = client.push(chunk, total: 100_000_000)
        #expect(written < 8_000_000, "the server read \(written) bytes of calls it could not answer yet")
        // The monitor ends: every complete call written is answered, in order.
        server.tick(1, continues: false)
        shutdown(client.fd, Int32(SHUT_WR))
        let (text, closed) = client.readToClose()
        #expect(closed)
        let replies = text.split(separator: "\0")
        #expect(replies.count == 2 + written / call.count, "replies: \(replies.count), calls: \(written / call.count)")
    }

    @Test("a connection with no call in progress for the idle limit is closed and said; a running call keeps it")
    func idleTimeout() throws {
        var limits = VarlinkLimits()
        limits.idleTimeoutMilliseconds = 300
        let server = try TestServer(limits: limits)
        let idle = RawConnection(server.path)
        let monitor = RawConnection(server.path)
        monitor.write(#"{"method":"org.example.test.Ticks","more":true}"#)
        #expect(idle.readToClose() == ("", true))
        // A second idle connection, made after the first was closed, is closed in its turn: by then the monitor
        // has been without a new call for longer than the limit.
        #expect(RawConnection(server.path).readToClose() == ("", true))
        server.tick(1, continues: false)
        _ = monitor
        #expect(
            server.noticeMessages.contains {
                $0.hasPrefix("Closed the control connection of pid ") && $0.hasSuffix("no call for 300 ms")
            })
        #expect(server.server.connectionCount == 1)
    }

    @Test("a message over the limit and one that is not a call close their connection, and each is said")
    func offendersSaid() throws {
        var limits = VarlinkLimits()
        limits.maximumMessageBytes = 1024
        let server = try TestServer(limits: limits)
        let huge = RawConnection(server.path)
        huge.write(String(repeating: "a", count: 4096), terminated: false)
        #expect(huge.readToClose().closed)
        #expect(
            server.noticeMessages.contains { $0.hasSuffix(": it sent a message longer than 1024 bytes") },
            "\(server.noticeMessages)")
        let notACall = RawConnection(server.path)
        notACall.write(#"{"not":"a call"}"#)
        #expect(notACall.readToClose().closed)
        #expect(
            server.noticeMessages.contains {
                $0.hasSuffix(": it sent a message that is not a Varlink call (no 'method')")
            },
            "\(server.noticeMessages)")
    }

    @Test("big calls pipelined behind a call that never ends: reading stops at a message's worth of waiting bytes")
    func pipeliningBigCalls() throws {
        let server = try TestServer()
        let client = RawConnection(server.path)
        client.write(#"{"method":"org.example.test.Ticks","more":true}"#)
        for _ in 0..<100 where server.ticks.all.isEmpty { usleep(10_000) }
        // 60 calls of 500 KB each stay under the 64-call limit: only their bytes can stop the reading.
        let call =
            Array(#"{"method":"org.example.test.Echo","parameters":{"text":""#.utf8)
            + [UInt8](repeating: UInt8(ascii: "a"), count: 500_000) + Array(#""}}"#.utf8) + [0]
        let written = client.push(call, total: 60 * call.count)
        #expect(written < 4_000_000, "the server took \(written) bytes of calls it could not start")
    }

    @Test("a client that reads none of its replies for the idle limit is told, kept until it leaves, and said")
    func stalledReader() throws {
        var limits = VarlinkLimits()
        limits.idleTimeoutMilliseconds = 300
        let server = try TestServer(limits: limits)
        let slow = Self.subscribeReadingNothing(server)
        // 200 KB of replies: more than the socket holds, far less than the 4 MiB that would cut it off.
        for n in 1...200 { server.tick(n) }
        #expect(
            waitUntil(timeout: 3) {
                server.noticeMessages.contains {
                    $0.hasSuffix("it read none of its replies for 300 ms (org.example.test.ClientTooSlow)")
                }
            },
            "\(server.noticeMessages)")
        #expect(server.ticks.all.first?.isCancelled == true)
        // What it holds now is the error and the end of a tick: kept, over several limits, for the client to read;
        // or written already, when the socket had room for that little, and then closed.
        usleep(1_000_000)
        if server.server.connectionCount == 1 {
            close(slow.fd)
            #expect(waitUntil(timeout: 3) { server.server.connectionCount == 0 }, "the client left; the server kept it")
        } else {
            let (text, closed) = slow.readToClose()
            #expect(
                closed && Self.ticksAndError(text)?.error == "org.example.test.ClientTooSlow", "\(text.suffix(200))")
        }
        withExtendedLifetime(slow) {}
    }

    @Test("a client that stops reading a large reply is told it is too slow, then closed if it reads nothing more")
    func stalledLargeReply() throws {
        var limits = VarlinkLimits()
        limits.idleTimeoutMilliseconds = 300
        let server = try TestServer(limits: limits)
        let slow = RawConnection(server.path)
        // A 900 KB reply: the socket takes some, the rest waits, more than a told connection may keep.
        slow.write(
            #"{"method":"org.example.test.Echo","parameters":{"text":""# + String(repeating: "a", count: 900_000)
                + #""}}"#)
        #expect(waitUntil(timeout: 5) { server.server.connectionCount == 0 }, "\(server.noticeMessages)")
        #expect(server.noticeMessages.contains { $0.contains("read none of its replies for 300 ms") })
        #expect(
            server.noticeMessages.contains { $0.contains("read nothing for 300 ms after it was told") },
            "\(server.noticeMessages)")
        withExtendedLifetime(slow) {}
    }

    @Test("a client that reads none of its replies for the idle limit finds whole replies, ClientTooSlow, a close")
    func stalledReaderIsTold() throws {
        var limits = VarlinkLimits()
        limits.idleTimeoutMilliseconds = 300
        let server = try TestServer(limits: limits)
        let slow = Self.subscribeReadingNothing(server)
        for n in 1...200 { server.tick(n) }
        #expect(waitUntil(timeout: 5) { server.noticeMessages.contains { $0.contains("read none of its replies") } })
        // Several limits later (it is kept): what the socket held, the rest of the reply begun, the error, the close.
        usleep(1_000_000)
        let (text, closed) = slow.readToClose()
        #expect(closed)
        let read = Self.ticksAndError(text)
        #expect(read?.error == "org.example.test.ClientTooSlow", "\(text.suffix(200))")
        #expect(read.map { $0.ticks == Array(0..<$0.ticks.count) } == true, "\(read?.ticks ?? [])")
        #expect((read?.ticks.count ?? 0) < 200, "the replies not begun were sent")
        #expect(server.ticks.all.first?.isCancelled == true)
    }

    @Test("many small calls in one read all come out, and a message split across reads is joined")
    func framingManyMessages() throws {
        var framing = VarlinkFraming(maximumMessageBytes: 1 << 20)
        let message = Array(#"{"method":"a.b"}"#.utf8) + [0]
        let bytes = Array([[UInt8]](repeating: message, count: 50_000).joined())
        let messages = try framing.append(bytes[..<(bytes.count - 5)])
        #expect(messages.count == 49_999)
        #expect(try framing.append(bytes[(bytes.count - 5)...]).count == 1)
    }
}
