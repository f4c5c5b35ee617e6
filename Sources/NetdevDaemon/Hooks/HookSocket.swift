internal import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// One end of the `SOCK_SEQPACKET` connection between netdevd and its hook runner: whole messages in, whole
/// messages out, never a partial one.
struct HookSocket: Sendable {
    let descriptor: Int32

    /// What one receive found.
    enum Received {
        case message([UInt8])
        /// A message longer than the limit, dropped whole.
        case oversized(Int)
        /// Nothing now (non-blocking).
        case none
        /// The peer closed its end (or the connection failed: `errno` then).
        case closed(Int32)
    }

    /// A connected pair, both ends close-on-exec.
    static func pair() -> (HookSocket, HookSocket)? {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return nil
        }
        return (HookSocket(descriptor: ends[0]), HookSocket(descriptor: ends[1]))
    }

    /// Connects to the runner's socket at `path`; the errno when it cannot.
    static func connect(to path: String) -> Result<HookSocket, SpawnFailure> {
        let descriptor = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(SpawnFailure(call: "socket", errno: errno)) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(descriptor)
            return .failure(SpawnFailure(call: "connect", errno: ENAMETOOLONG))
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let failure = errno
            Glibc.close(descriptor)
            return .failure(SpawnFailure(call: "connect", errno: failure))
        }
        return .success(HookSocket(descriptor: descriptor))
    }

    /// Sends one message, with `passing` (a descriptor the peer receives a copy of) unless it is -1; `false` with
    /// `errno` set when the peer is gone or the message cannot be sent. With `waiting`, blocks while the peer's
    /// queue is full, at most the send timeout set with ``limitSendTime(seconds:)``; without, fails at once (EAGAIN).
    func send(_ bytes: [UInt8], passing: Int32 = -1, waiting: Bool = true) -> Bool {
        let flags = Int32(MSG_NOSIGNAL) | (waiting ? 0 : Int32(MSG_DONTWAIT))
        while true {
            let sent = bytes.withUnsafeBytes {
                netdevd_send_with_descriptor(descriptor, $0.baseAddress, $0.count, passing, flags)
            }
            if sent == bytes.count { return true }
            if sent < 0 && errno == EINTR { continue }
            return false
        }
    }

    /// Receives one message without blocking, through `buffer` (one per connection: a message's bytes are copied
    /// out of it, never a buffer of the largest size allocated and cleared per message).
    func receive(into buffer: HookMessageBuffer) -> Received {
        let space = buffer.space
        while true {
            var passed: Int32 = -1
            let count = netdevd_receive_with_descriptor(
                descriptor, space.baseAddress, space.count, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC), &passed)
            buffer.keep(passed)
            if count >= space.count { return .oversized(count) }
            if count > 0 { return .message(Array(UnsafeRawBufferPointer(rebasing: space[0..<count]))) }
            if count == 0 { return .closed(0) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .none }
            return .closed(errno)
        }
    }

    /// Receives one message, waiting at most `milliseconds` (``Received/none`` after that).
    func receive(waitingAtMost milliseconds: Int32, into buffer: HookMessageBuffer) -> Received {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, milliseconds) == 1 else { return .none }
        return receive(into: buffer)
    }

    /// A send that would block longer than `seconds` fails with EAGAIN instead.
    func limitSendTime(seconds: Int) {
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The peer's pid and uid as the kernel saw them when the connection was made.
    func peer() -> (pid: pid_t, uid: uid_t)? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc's module hides it behind _GNU_SOURCE).
        var credentials: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return (credentials.0, credentials.1)
    }

    /// No more sends from this end; the peer reads the end of the connection.
    func shutdownBoth() {
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}

/// The memory one end of the connection receives messages into: one byte more than the largest message, so a
/// longer one shows as longer (`MSG_TRUNC`).
///
/// `@unchecked Sendable`: used by one queue only, the one its connection's end is served on.
final class HookMessageBuffer: @unchecked Sendable {
    let space: UnsafeMutableRawBufferPointer
    /// The descriptor passed with the last message received, until taken (closed if the next message comes first).
    private var passed: Int32 = -1

    /// Keeps the descriptor of the message just received.
    func keep(_ descriptor: Int32) {
        if passed >= 0 { close(passed) }
        passed = descriptor
    }

    /// The descriptor passed with the last message, now the caller's to close; -1 when none was.
    func takeDescriptor() -> Int32 {
        defer { passed = -1 }
        return passed
    }

    init(limit: Int = HookRunnerLimits.maximumMessageBytes) {
        space = UnsafeMutableRawBufferPointer.allocate(byteCount: limit + 1, alignment: 8)
    }

    deinit {
        if passed >= 0 { close(passed) }
        space.deallocate()
    }
}
