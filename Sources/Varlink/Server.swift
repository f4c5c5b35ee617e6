internal import CLinux
import Dispatch
import Locking

#if canImport(Glibc)
import Glibc
#endif

/// Who is at the other end of a connection (SO_PEERCRED).
public struct VarlinkPeer: Sendable, Equatable, CustomStringConvertible {
    /// The peer's process id.
    public var pid: Int32
    /// The peer's user id.
    public var uid: UInt32
    /// The peer's group id.
    public var gid: UInt32

    /// A peer with these credentials (the server reads them with `SO_PEERCRED`).
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// `pid 123 (uid 1000)`.
    public var description: String { "pid \(pid) (uid \(uid))" }
}

/// One Varlink interface served: its name, its description in Varlink's interface definition language, and its
/// methods by member name.
public struct VarlinkInterface: Sendable {
    /// `io.netdevd`.
    public var name: String
    /// The interface definition (`interface io.netdevd ...`).
    public var description: String
    /// The methods, by member name (`GetState`).
    public var methods: [String: VarlinkMethod]
    /// The methods' parameters, read from `description`: a call is checked against them before its method runs.
    public let signatures: [String: MethodSignature]

    /// An interface; its calls' parameters are checked against what `description` declares.
    public init(name: String, description: String, methods: [String: VarlinkMethod]) {
        self.name = name
        self.description = description
        self.methods = methods
        self.signatures = MethodSignature.parse(description)
    }
}

/// A method implementation: answer `call` through `replier` (now or later, once or, for `more`, many times).
public typealias VarlinkMethod = @Sendable (VarlinkCall, VarlinkPeer, VarlinkReplier) -> Void

/// The server's limits: what one local client, hostile or broken, can cost the daemon.
///
/// Memory per connection is bounded by ``maximumMessageBytes`` (input), ``maximumPendingCalls`` (calls read but
/// not yet answered; past it the connection is not read until replies are taken, so a client that pipelines
/// without reading blocks in its own `send`) and ``maximumPendingOutputBytes`` (replies not yet read). The number
/// of connections is bounded per uid and overall, with root counted apart, so no other user can lock root's
/// `netdevctl` out.
public struct VarlinkLimits: Sendable {
    /// The longest message accepted; a longer one closes the connection.
    public var maximumMessageBytes = 1 << 20
    /// Connections of users other than root accepted at once; more are refused. With the other limits, what they
    /// can hold at worst is about 6.5 MiB each (a message being read, 1 MiB of calls waiting, 4 MiB of replies and
    /// the one being added): some 420 MiB for 64.
    public var maximumConnections = 64
    /// Connections one uid other than root may have open at once; more are refused.
    public var maximumConnectionsPerUser = 32
    /// Connections root may have open at once, counted apart from everyone else's: whatever other users hold,
    /// root has this many; more are refused.
    public var maximumRootConnections = 512
    /// Calls read from one connection and not yet answered; past this, or past ``maximumMessageBytes`` of them, the
    /// connection is not read until they are.
    public var maximumPendingCalls = 64
    /// Replies waiting for a slow reader, in bytes; past this the call gets an error and the connection closes.
    public var maximumPendingOutputBytes = 4 << 20
    /// How long a connection may stay open with no call in progress, or with replies its client reads none of,
    /// before it is closed, in milliseconds (checked every quarter of it); 0 keeps it open.
    public var idleTimeoutMilliseconds = 60_000

    /// The defaults: 1 MiB messages; 64 connections of non-root users, 32 per uid, and 512 of root's; 64 pending
    /// calls (1 MiB of them at most) and 4 MiB of pending output per connection; 60 s idle or without reading.
    public init() {}
}

/// Something a client did that cost it its connection or a call, or a fault of the server's own, for the log.
public struct VarlinkNotice: Sendable, Equatable, CustomStringConvertible {
    /// How much it matters.
    public enum Severity: Sendable, Equatable {
        /// The server cannot do its job (it cannot accept connections).
        case error
        /// A client was refused or cut off.
        case warning
        /// Housekeeping (an idle connection closed).
        case info
    }

    /// How much it matters.
    public var severity: Severity
    /// What happened, in words, naming the peer when there is one.
    public var message: String

    /// `message`.
    public var description: String { message }
}

/// A Varlink server on an AF_UNIX stream socket: NUL-terminated JSON calls and replies, `org.varlink.service`
/// built in, per-connection peer credentials and limits. All connection state lives on the server's serial
/// queue; method implementations may reply from any thread. A bad client (invalid JSON, an oversized message,
/// a slow reader, a connection idle too long) loses its connection, with a ``VarlinkNotice`` saying so; everyone
/// else is served on. Notices of one kind are said at most once per 10 s, with a count of those held back.
public final class VarlinkServer: Sendable {
    private let queue = DispatchQueue(label: "varlink.server")
    private let listener: Int32
    private let interfaces: [String: VarlinkInterface]
    let limits: VarlinkLimits
    private let info: [String: JSONValue]
    private let state = Locked<ServerState>(ServerState())
    private let notify: @Sendable (VarlinkNotice) -> Void
    private let throttle = NoticeThrottle()
    /// A descriptor held in reserve (/dev/null) for ``shedOneConnection(reason:)``; -1 while it is not.
    private let spare = Locked<Int32>(-1)

    private struct ServerState {
        var source: SourceBox?
        var connections: [ObjectIdentifier: Connection] = [:]
        /// Open connections per uid.
        var perUser: [UInt32: Int] = [:]
        /// Connections of users other than root.
        var nonRoot = 0
        /// Sweeps idle connections while any is open.
        var sweeper: SourceBox?
        /// The sweeper's clock (a timerfd), armed while any connection is open; -1 without one.
        var sweepClock: Int32 = -1
        var sweeping = false
        var stopped = false
    }

    /// Serves `interfaces` on the already listening socket `fileDescriptor` (socket activation).
    public init(
        listening fileDescriptor: Int32,
        interfaces: [VarlinkInterface],
        vendor: String,
        product: String,
        version: String,
        url: String,
        limits: VarlinkLimits = VarlinkLimits(),
        notify: @escaping @Sendable (VarlinkNotice) -> Void = { _ in }
    ) {
        listener = fileDescriptor
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
        guard fd >= 0 else { throw VarlinkSystemError(operation: "socket", errno: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw VarlinkSystemError(operation: "bind \(path) (path too long)", errno: ENAMETOOLONG)
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
            let error = VarlinkSystemError(operation: "bind/listen \(path)", errno: errno)
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
        state.withLock { $0.source = SourceBox(source) }
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
                Self.refuse(fd, because: refusal)
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
    /// out of descriptors, a connection left in the listen queue keeps the listener readable (netdevd would spin on
    /// it) and its client waiting for good. Returns whether one was shed. (Not a timed pause: a Dispatch timer made
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
            let problem = "netdevd is out of file descriptors (\(String(cString: strerror(reason))))"
            Self.refuse(fd, because: problem)
            say(.error, kind: "accept", "Refused a control connection from \(peer): \(problem)")
        }
        let reopened = open("/dev/null", O_RDONLY | O_CLOEXEC)
        spare.withLock { $0 = reopened }
        return fd >= 0
    }

    /// Answers whatever the client sends first with `io.netdevd.TooManyConnections` and `reason`, so it can say
    /// why, and closes `fd` (best effort: the socket is new and empty, and AF_UNIX keeps what was sent readable
    /// after the close).
    private static func refuse(_ fd: Int32, because reason: String) {
        let error = VarlinkReply(parameters: ["reason": .string(reason)], error: "io.netdevd.TooManyConnections")
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
            state.sweeper = SourceBox(source)
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
    /// connection is open (an idle netdevd has no connection, and its sweeper's clock is disarmed).
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

    /// Answers one message as a connection from `peer` would have it answered, without a socket: `replies`
    /// receives each reply message (NUL-terminated), in order, and none for a `oneway` call. The caller counts as
    /// gone once the method has returned (a `Monitor` sends its first state only). Returns why the message is not a
    /// call (a connection is closed for that), or `nil`. For fuzzing the whole path from bytes to replies, and for
    /// in-process callers.
    public func answer(
        _ message: [UInt8], from peer: VarlinkPeer, replies: @escaping @Sendable ([UInt8]) -> Void
    ) -> VarlinkCall.NotACall? {
        let call: VarlinkCall
        switch VarlinkCall.decode(message) {
        case .success(let decoded): call = decoded
        case .failure(let problem): return problem
        }
        let replier = VarlinkReplier(call: call) { replier, message, _ in
            if !replier.call.oneway && !message.isEmpty { replies(message) }
        }
        dispatch(call, peer: peer, replier: replier)
        replier.cancel()
        return nil
    }

    /// Routes one call: on the server queue for a connection's call, on the caller's thread for
    /// ``answer(_:from:replies:)`` (it reads only what never changes after init).
    func dispatch(_ call: VarlinkCall, peer: VarlinkPeer, replier: VarlinkReplier) {
        if call.interface == "org.varlink.service" {
            if let signature = Self.serviceSignatures[call.member],
                let invalid = signature.invalidParameter(in: call.parameters)
            {
                replier.error(VarlinkStandardError.invalidParameter, ["parameter": .string(invalid)])
                return
            }
            switch call.member {
            case "GetInfo":
                replier.reply(info)
            case "GetInterfaceDescription":
                guard let name = call.parameters["interface"]?.stringValue else {
                    replier.error(VarlinkStandardError.invalidParameter, ["parameter": .string("interface")])
                    return
                }
                guard let interface = interfaces[name] else {
                    replier.error(VarlinkStandardError.interfaceNotFound, ["interface": .string(name)])
                    return
                }
                replier.reply(["description": .string(interface.description)])
            default:
                replier.error(VarlinkStandardError.methodNotFound, ["method": .string(call.method)])
            }
            return
        }
        guard let interface = interfaces[call.interface] else {
            replier.error(VarlinkStandardError.interfaceNotFound, ["interface": .string(call.interface)])
            return
        }
        guard let method = interface.methods[call.member] else {
            replier.error(VarlinkStandardError.methodNotFound, ["method": .string(call.method)])
            return
        }
        if let invalid = interface.signatures[call.member]?.invalidParameter(in: call.parameters) {
            replier.error(VarlinkStandardError.invalidParameter, ["parameter": .string(invalid)])
            return
        }
        method(call, peer, replier)
    }

    /// org.varlink.service's methods' parameters.
    static let serviceSignatures = MethodSignature.parse(serviceDescription)

    static let serviceDescription = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        error InvalidParameter (parameter: string)

        # Client is denied access
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        error ExpectedMore ()
        """
}

/// A failed system call.
public struct VarlinkSystemError: Error, CustomStringConvertible, Sendable {
    /// What was attempted.
    public let operation: String
    /// The errno.
    public let errno: Int32

    /// `varlink: <operation>: <strerror>`.
    public var description: String {
        "varlink: \(operation): \(String(cString: strerror(errno)))"
    }
}

/// A Dispatch source to cancel. `@unchecked Sendable`: dispatch_source_cancel is thread-safe and nothing else is
/// done with the source after set-up.
final class SourceBox: @unchecked Sendable {
    let source: any DispatchSourceProtocol

    init(_ source: any DispatchSourceProtocol) {
        self.source = source
    }

    func cancel() {
        source.cancel()
    }

    func suspend() {
        source.suspend()
    }

    func resume() {
        source.resume()
    }
}

/// Lets a kind of notice through at most once per interval and counts those held back, so that a client repeating
/// an offence costs one log line per interval, not one per offence. (A count is said with the next notice of its
/// kind let through; if none comes, it is not said.)
public final class NoticeThrottle: Sendable {
    private let last = Locked<[String: (said: UInt64, heldBack: Int)]>([:])
    private let intervalNanoseconds: UInt64

    /// A throttle letting one notice of each kind through every `intervalSeconds`.
    public init(intervalSeconds: UInt64 = 10) {
        intervalNanoseconds = intervalSeconds * 1_000_000_000
    }

    /// `nil` when a notice of `kind` now is held back; otherwise how many were held back since the last one.
    public func admit(_ kind: String) -> Int? {
        last.withLock { last -> Int? in
            let now = Connection.monotonicNanoseconds()
            if let previous = last[kind], now >= previous.said, now - previous.said < intervalNanoseconds {
                last[kind]?.heldBack += 1
                return nil
            }
            defer { last[kind] = (now, 0) }
            return last[kind]?.heldBack ?? 0
        }
    }

    /// " (and 3 more like it in the last 10 s)" for a count above 0, else nothing.
    public static func suffix(_ heldBack: Int) -> String {
        heldBack > 0 ? " (and \(heldBack) more like it in the last 10 s)" : ""
    }
}
