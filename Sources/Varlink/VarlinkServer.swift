internal import CLinux
import Dispatch
import Locking
import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// A Varlink server on an AF_UNIX stream socket: NUL-terminated JSON calls and replies, `org.varlink.service`
/// built in, per-connection peer credentials and limits. All connection state lives on the server's serial
/// queue; method implementations may reply from any thread. A bad client (invalid JSON, an oversized message,
/// a slow reader, a connection idle too long) loses its connection, with a ``VarlinkNotice`` saying so; everyone
/// else is served on. Notices of one kind are said at most once per 10 s, with a count of those held back.
public final class VarlinkServer: Sendable {
    private let queue = DispatchQueue(label: "varlink.server")
    private let listener: Int32
    /// Every interface served, `org.varlink.service` included, by name.
    let interfaces: [String: VarlinkInterface]
    let limits: VarlinkLimits
    /// `org.varlink.service.GetInfo`'s reply.
    let info: [String: JSONValue]
    /// What a shed client is told.
    let overloadErrors: VarlinkOverloadErrors
    /// Who is out of descriptors when a connection is refused for want of one (the product's name).
    private let product: String
    private let state = Locked<ServerState>(ServerState())
    private let notify: @Sendable (VarlinkNotice) -> Void
    /// Called on the server's queue when a connection has written out every reply it had.
    let drained: @Sendable () -> Void
    private let throttle = NoticeThrottle()
    /// A descriptor held in reserve (/dev/null) for ``shedOneConnection(reason:)``; -1 while it is not.
    private let spare = Locked<Int32>(-1)

    private struct ServerState {
        var source: DispatchSourceHandle?
        var connections: [ObjectIdentifier: Connection] = [:]
        /// Open connections per uid.
        var perUser: [UInt32: Int] = [:]
        /// Connections of users other than root.
        var nonRoot = 0
        /// Sweeps idle connections while any is open.
        var sweeper: DispatchSourceHandle?
        /// The sweeper's clock (a timerfd), armed while any connection is open; -1 without one.
        var sweepClock: Int32 = -1
        var sweeping = false
        var stopped = false
    }

    /// Serves `interfaces` on the already listening socket `fileDescriptor` (socket activation). A shed client is
    /// told `overloadErrors`, by default named after the first interface. `drained` is called (on the server's
    /// queue) each time a connection has written out every reply it had, when the memory that held them is free: a
    /// server that gives memory back to the system once quiet learns of it there.
    public init(
        listening fileDescriptor: Int32,
        interfaces: [VarlinkInterface],
        vendor: String,
        product: String,
        version: String,
        url: String,
        limits: VarlinkLimits = VarlinkLimits(),
        overloadErrors: VarlinkOverloadErrors? = nil,
        drained: @escaping @Sendable () -> Void = {},
        notify: @escaping @Sendable (VarlinkNotice) -> Void = { _ in }
    ) {
        listener = fileDescriptor
        self.drained = drained
        self.product = product
        self.overloadErrors =
            overloadErrors ?? VarlinkOverloadErrors(interface: interfaces.first?.name ?? "org.varlink.service")
        self.limits = limits
        self.notify = notify
        var all = Dictionary(interfaces.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        info = [
            "vendor": .string(vendor), "product": .string(product), "version": .string(version), "url": .string(url),
            "interfaces": .array((["org.varlink.service"] + interfaces.map(\.name)).map { .string($0) }),
        ]
        all["org.varlink.service"] = VarlinkInterface(
            name: "org.varlink.service", description: Self.serviceDescription, methods: [:])
        self.interfaces = all
    }

    /// Creates, binds (replacing a stale socket file) and listens on `path`, mode 0666.
    public static func listen(on path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCallError("varlink", operation: "socket", errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw SystemCallError("varlink", operation: "bind \(path) (path too long)", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        unlink(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, chmod(path, 0o666) == 0, Glibc.listen(fd, 64) == 0 else {
            let error = SystemCallError("varlink", operation: "bind/listen \(path)", errno: errno)
            close(fd)
            throw error
        }
        return fd
    }

    /// Starts accepting connections (once: a stopped server does not start again).
    public func start() {
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        spare.withLock { $0 = open("/dev/null", O_RDONLY | O_CLOEXEC) }
        makeSweeper()
        let source = DispatchSource.makeReadSource(fileDescriptor: listener, queue: queue)
        source.setEventHandler { [weak self] in self?.acceptAll() }
        source.resume()
        state.withLock { $0.source = DispatchSourceHandle(source) }
    }

    /// Stops accepting and closes every connection.
    public func stop() {
        let (source, sweeper, connections) = state.withLock { state in
            defer {
                state.source = nil
                state.sweeper = nil
                state.sweepClock = -1
                state.connections = [:]
                state.stopped = true
            }
            return (state.source, state.sweeper, Array(state.connections.values))
        }
        source?.cancel()
        sweeper?.cancel()
        let reserve = spare.withLock { spare -> Int32 in
            defer { spare = -1 }
            return spare
        }
        if reserve >= 0 { Glibc.close(reserve) }
        queue.async {
            for connection in connections { connection.close() }
        }
    }

    /// Connections open now.
    public var connectionCount: Int {
        state.withLock { $0.connections.count }
    }

    /// Accepts every pending connection (on the queue). Each is admitted or closed at once by the per-uid and
    /// overall limits; out of descriptors, each is shed on the descriptor held in reserve.
    private func acceptAll() {
        while true {
            let fd = accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
            guard fd >= 0 else {
                switch errno {
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE:
                    if shedOneConnection(reason: errno) { continue }
                default: break
                }
                return
            }
            let peer = Self.peerCredentials(of: fd)
            let connection = Connection(fd: fd, peer: peer, server: self, queue: queue, limits: limits)
            if let refusal = admit(connection) {
                refuse(fd, because: refusal)
                say(.warning, kind: "refused", "Refused a control connection from \(peer): \(refusal)")
                continue
            }
            let clock = state.withLock { state -> Int32 in
                guard !state.sweeping, !state.stopped, limits.idleTimeoutMilliseconds > 0 else { return -1 }
                state.sweeping = state.sweepClock >= 0
                return state.sweepClock
            }
            if clock >= 0 { Self.arm(clock, milliseconds: max(limits.idleTimeoutMilliseconds / 4, 10)) }
            connection.start()
        }
    }

    /// Counts `connection` in (with the connections ``stop()`` closes) if the limits allow; otherwise says why not.
    private func admit(_ connection: Connection) -> String? {
        let peer = connection.peer
        return state.withLock { state -> String? in
            guard !state.stopped else { return "the server is stopping" }
            let own = state.perUser[peer.uid, default: 0]
            if peer.uid == 0 {
                if own >= limits.maximumRootConnections {
                    return "root already has \(own) connections open (root's limit)"
                }
            } else {
                if own >= limits.maximumConnectionsPerUser {
                    return "uid \(peer.uid) already has \(own) connections open (the limit per user)"
                }
                if state.nonRoot >= limits.maximumConnections {
                    return
                        "\(state.nonRoot) connections of users other than root are open (their limit; root still has "
                        + "room)"
                }
                state.nonRoot += 1
            }
            state.perUser[peer.uid] = own + 1
            state.connections[ObjectIdentifier(connection)] = connection
            return nil
        }
    }

    /// Accepts one waiting connection on the descriptor held in reserve, answers it with the reason and closes it:
    /// out of descriptors, a connection left in the listen queue keeps the listener readable (the server would spin
    /// on it) and its client waiting for good. Returns whether one was shed. (Not a timed pause: a Dispatch timer made
    /// then may need a descriptor of its own, and in CI one never fired.)
    private func shedOneConnection(reason: Int32) -> Bool {
        var reserve = spare.withLock { spare -> Int32 in
            defer { spare = -1 }
            return spare
        }
        // Another thread's descriptor may have taken the reserve's place while it was closed below; once that one
        // is closed, the place is free again.
        if reserve < 0 { reserve = open("/dev/null", O_RDONLY | O_CLOEXEC) }
        guard reserve >= 0 else { return false }
        Glibc.close(reserve)
        let fd = accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        if fd >= 0 {
            let peer = Self.peerCredentials(of: fd)
            let problem = "\(product) is out of file descriptors (\(String(cString: strerror(reason))))"
            refuse(fd, because: problem)
            say(.error, kind: "accept", "Refused a control connection from \(peer): \(problem)")
        }
        let reopened = open("/dev/null", O_RDONLY | O_CLOEXEC)
        spare.withLock { $0 = reopened }
        return fd >= 0
    }

    /// Answers whatever the client sends first with the ``VarlinkOverloadErrors/tooManyConnections`` error and
    /// `reason`, so it can say why, and closes `fd` (best effort: the socket is new and empty, and AF_UNIX keeps what
    /// was sent readable after the close).
    private func refuse(_ fd: Int32, because reason: String) {
        let error = VarlinkReply(parameters: ["reason": .string(reason)], error: overloadErrors.tooManyConnections)
        // Dropping is right: a reply of two strings cannot fail to encode, and the close says the rest.
        if let bytes = try? VarlinkFraming.encode(error) {
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        Glibc.close(fd)
    }

    /// Makes the sweeper: a timerfd of the server's own, made at start while descriptors are to spare, read by a
    /// Dispatch source (which needs no descriptor of its own). Not a Dispatch timer: libdispatch makes the timerfd
    /// behind its first timer when that is armed, from its own thread, so a timer made at the first connection
    /// could take the descriptor held in reserve for shedding (CI saw the listener spin so, out of descriptors).
    private func makeSweeper() {
        guard limits.idleTimeoutMilliseconds > 0 else { return }
        let clock = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard clock >= 0 else {
            notify(
                VarlinkNotice(
                    severity: .warning,
                    message: "Idle control connections are not closed: timerfd_create failed ("
                        + "\(String(cString: strerror(errno))))"))
            return
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: clock, queue: queue)
        source.setEventHandler { [weak self] in
            var expirations: UInt64 = 0
            _ = read(clock, &expirations, MemoryLayout<UInt64>.size)
            self?.sweepIdleConnections()
        }
        source.setCancelHandler { _ = Glibc.close(clock) }
        state.withLock { state in
            state.sweepClock = clock
            state.sweeper = DispatchSourceHandle(source)
        }
        source.resume()
    }

    /// Arms `clock` to fire every `milliseconds`, or disarms it (0).
    private static func arm(_ clock: Int32, milliseconds: Int) {
        var setting = itimerspec()
        setting.it_value = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        setting.it_interval = setting.it_value
        _ = timerfd_settime(clock, 0, &setting, nil)
    }

    /// Closes connections idle past the limit, those whose client has read none of their replies for as long, and
    /// those whose client left while they were not being read; every quarter of the limit, for as long as any
    /// connection is open (an idle server has no connection, and its sweeper's clock is disarmed).
    private func sweepIdleConnections() {
        let now = Connection.monotonicNanoseconds()
        let (connections, idleClock) = state.withLock { state -> ([Connection], Int32) in
            guard !state.connections.isEmpty else {
                state.sweeping = false
                return ([], state.sweepClock)
            }
            return (Array(state.connections.values), -1)
        }
        if idleClock >= 0 { Self.arm(idleClock, milliseconds: 0) }
        let limit = UInt64(limits.idleTimeoutMilliseconds) * 1_000_000
        let milliseconds = limits.idleTimeoutMilliseconds
        let idleLimit = milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
        for connection in connections {
            connection.closeIfPeerGone()
            connection.closeIfStalled(now: now, limit: limit, limitText: idleLimit)
        }
        for connection in connections where connection.idleSince.map({ now >= $0 && now - $0 >= limit }) == true {
            connection.close()
            say(.info, kind: "idle", "Closed the control connection of \(connection.peer): no call for \(idleLimit)")
        }
    }

    /// Says `message`, unless one of the same `kind` was said within 10 s (then it is counted, and the count goes
    /// with the next one said).
    func say(_ severity: VarlinkNotice.Severity, kind: String, _ message: String) {
        guard let heldBack = throttle.admit(kind) else { return }
        notify(VarlinkNotice(severity: severity, message: message + NoticeThrottle.suffix(heldBack)))
    }

    func closed(_ connection: Connection) {
        state.withLock { state in
            guard state.connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
            let uid = connection.peer.uid
            state.perUser[uid] = (state.perUser[uid] ?? 1) - 1
            if state.perUser[uid] == 0 { state.perUser[uid] = nil }
            if uid != 0 { state.nonRoot -= 1 }
        }
    }

    /// Who is at the other end of `fd` (SO_PEERCRED); uid `UInt32.max` when the kernel does not say.
    private static func peerCredentials(of fd: Int32) -> VarlinkPeer {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc's module hides it behind _GNU_SOURCE).
        var credentials: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            return VarlinkPeer(pid: 0, uid: UInt32.max, gid: UInt32.max)
        }
        return VarlinkPeer(pid: credentials.0, uid: credentials.1, gid: credentials.2)
    }
}
