import Foundation
import KernelTestSupport
import Systemd
import Testing

@Suite("ServiceNotifier", .serialized)
struct NotifierTests {
    @Test("fields are encoded in order, RELOADING with MONOTONIC_USEC, STATUS on one line")
    func encoding() throws {
        let text = try ServiceNotifier.encode([
            .reloading(monotonicMicroseconds: 123_456), .status("2 links\n3 devices"), .extendTimeout(microseconds: 5),
            .errno(22), .custom(key: "X_NETDEVD_PHASE", value: "running"),
        ])
        #expect(
            text
                == "RELOADING=1\nMONOTONIC_USEC=123456\nSTATUS=2 links 3 devices\nEXTEND_TIMEOUT_USEC=5\nERRNO=22\n"
                + "X_NETDEVD_PHASE=running"
        )
        #expect(throws: NotifyError.invalidCustomKey("PHASE")) {
            try ServiceNotifier.encode([.custom(key: "PHASE", value: "x")])
        }
        #expect(throws: NotifyError.invalidCustomKey("X_lower")) {
            try ServiceNotifier.encode([.custom(key: "X_lower", value: "x")])
        }
    }

    @Test("one datagram per send, exactly the encoded fields, to the socket in NOTIFY_SOCKET")
    func datagrams() throws {
        let stub = try NotifySocket()
        setenv("NOTIFY_SOCKET", stub.path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        let notifier = ServiceNotifier()
        #expect(notifier.isEnabled)
        #expect(try notifier.send([.ready, .status("ready: 2 links")]))
        #expect(stub.receive() == "READY=1\nSTATUS=ready: 2 links")
        #expect(try notifier.send([.stopping]))
        #expect(stub.receive() == "STOPPING=1")
        #expect(try notifier.send([.watchdog]))
        #expect(stub.receive() == "WATCHDOG=1")
    }

    @Test("without NOTIFY_SOCKET nothing is sent and send says so")
    func disabled() throws {
        unsetenv("NOTIFY_SOCKET")
        #expect(!ServiceNotifier().isEnabled)
        #expect(try ServiceNotifier().send([.ready]) == false)
    }

    @Test("a NOTIFY_SOCKET that does not exist is an error, not silence")
    func missingSocket() {
        setenv("NOTIFY_SOCKET", "/nonexistent/netdevd-notify.sock", 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        #expect(throws: NotifyError.self) { try ServiceNotifier().send([.ready]) }
    }

    @Test("a manager that reads nothing: a send waits at most its limit, later ones are dropped at once, none hangs")
    func managerNotReading() throws {
        let stub = try NotifySocket()
        setenv("NOTIFY_SOCKET", stub.path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        // Fill the manager's queue (max_dgram_qlen datagrams, or its buffer), reading nothing. A direct sd_notify(3)
        // call blocks here, for good.
        let done = DispatchSemaphore(value: 0)
        let outcome = Protected<[String]>([])
        Thread.detachNewThread {
            for _ in 0..<100_000 {
                do {
                    try ServiceNotifier().send([.watchdog], waitMilliseconds: 200)
                } catch {
                    outcome.withLock { $0.append("\(error)") }
                    break
                }
            }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 20) == .success, "a send to a full queue is still blocked after 20 s")
        #expect(outcome.withLock { $0 } == ["\(NotifyError.managerNotReading(milliseconds: 200))"])
        // While that one waits for room, the next is dropped without waiting.
        #expect(throws: NotifyError.stillWaiting) { try ServiceNotifier().send([.status("dropped")]) }
        // Once the manager reads, the waiting one goes out, and notifications go through again.
        var received: [String] = []
        #expect(
            waitUntil(timeout: 10) {
                while let datagram = stub.receive(timeout: 0) { received.append(datagram) }
                return (try? ServiceNotifier().send([.ready], waitMilliseconds: 200)) == true
            })
        while let datagram = stub.receive(timeout: 1) {
            received.append(datagram)
            if datagram == "READY=1" { break }
        }
        #expect(received.last == "READY=1")
        #expect(!received.contains("STATUS=dropped"))
    }

    @Test("the watchdog interval comes from WATCHDOG_USEC, only for the process WATCHDOG_PID names")
    func watchdog() {
        setenv("WATCHDOG_USEC", "2000000", 1)
        setenv("WATCHDOG_PID", String(getpid()), 1)
        #expect(ServiceNotifier.watchdogInterval() == 2_000_000)
        setenv("WATCHDOG_PID", "1", 1)
        #expect(ServiceNotifier.watchdogInterval() == nil)
        unsetenv("WATCHDOG_USEC")
        unsetenv("WATCHDOG_PID")
        #expect(ServiceNotifier.watchdogInterval() == nil)
    }

    @Test("the monotonic clock in microseconds moves forward")
    func monotonic() {
        let first = ServiceNotifier.monotonicMicroseconds()
        usleep(2_000)
        #expect(ServiceNotifier.monotonicMicroseconds() >= first + 1_000)
    }
}

@Suite("ListenFDs")
struct ListenFDsTests {
    @Test("socket-activated descriptors come back with their names, for this process only")
    func activation() async {
        await #expect(processExitsWith: .success) {
            var pipes: [Int32] = [0, 0]
            guard pipe(&pipes) == 0, dup2(pipes[0], 3) == 3, dup2(pipes[1], 4) == 4 else { exit(2) }
            setenv("LISTEN_PID", String(getpid()), 1)
            setenv("LISTEN_FDS", "2", 1)
            setenv("LISTEN_FDNAMES", "varlink:other", 1)
            let fds = ListenFDs.take()
            guard fds == [ListenFD(fileDescriptor: 3, name: "varlink"), ListenFD(fileDescriptor: 4, name: "other")]
            else { exit(3) }
            guard getenv("LISTEN_FDS") == nil, ListenFDs.take().isEmpty else { exit(4) }
            exit(0)
        }
        await #expect(processExitsWith: .success) {
            setenv("LISTEN_PID", "1", 1)
            setenv("LISTEN_FDS", "1", 1)
            exit(ListenFDs.take().isEmpty ? 0 : 5)
        }
        // More descriptors said than passed (nothing open from 100 on): none is trusted, and nothing is made for
        // the two billion said.
        await #expect(processExitsWith: .success) {
            setenv("LISTEN_PID", String(getpid()), 1)
            setenv("LISTEN_FDS", "2000000000", 1)
            guard ListenFDs.take().isEmpty else { exit(6) }
            // A name list that does not match the count: none either.
            var pipes: [Int32] = [0, 0]
            guard pipe(&pipes) == 0, dup2(pipes[0], 3) == 3 else { exit(2) }
            setenv("LISTEN_PID", String(getpid()), 1)
            setenv("LISTEN_FDS", "1", 1)
            setenv("LISTEN_FDNAMES", "a:b", 1)
            exit(ListenFDs.take().isEmpty ? 0 : 7)
        }
    }
}
