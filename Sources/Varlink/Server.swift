import Dispatch
import FoundationEssentials
import Locking

#if canImport(Glibc)
import Glibc
#endif

/// Who is at the other end of a connection (SO_PEERCRED).
public struct VarlinkPeer: Sendable, Equatable {
    /// The peer's process id.
    public var pid: Int32
    /// The peer's user id.
    public var uid: UInt32
    /// The peer's group id.
    public var gid: UInt32
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

    /// An interface.
    public init(name: String, description: String, methods: [String: VarlinkMethod]) {
        self.name = name
        self.description = description
        self.methods = methods
    }
}

/// A method implementation: answer `call` through `replier` (now or later, once or, for `more`, many times).
public typealias VarlinkMethod = @Sendable (VarlinkCall, VarlinkPeer, VarlinkReplier) -> Void

/// The server's limits.
public struct VarlinkLimits: Sendable {
    /// The longest message accepted; a longer one closes the connection.
    public var maximumMessageBytes = 1 << 20
    /// Connections accepted at once; more are closed at once.
    public var maximumConnections = 128
    /// Replies waiting for a slow reader, in bytes; past this the call gets an error and the connection closes.
    public var maximumPendingOutputBytes = 4 << 20

    /// The defaults: 1 MiB messages, 128 connections, 4 MiB of pending output.
    public init() {}
}

/// A Varlink server on an AF_UNIX stream socket: NUL-terminated JSON calls and replies, `org.varlink.service`
/// built in, per-connection peer credentials and limits. All connection state lives on the server's serial
/// queue; method implementations may reply from any thread. A bad client (invalid JSON, an oversized message,
/// a slow reader) loses its connection; everyone else is served on.
public final class VarlinkServer: Sendable {
    private let queue = DispatchQueue(label: "varlink.server")
    private let listener: Int32
    private let interfaces: [String: VarlinkInterface]
    private let limits: VarlinkLimits
    private let info: [String: JSONValue]
    private let state = Locked<ServerState>(ServerState())

    private struct ServerState {
        var source: SourceBox?
        var connections: [ObjectIdentifier: Connection] = [:]
    }

    /// Serves `interfaces` on the already listening socket `fileDescriptor` (socket activation).
    public init(
        listening fileDescriptor: Int32,
        interfaces: [VarlinkInterface],
        vendor: String,
        product: String,
        version: String,
        url: String,
        limits: VarlinkLimits = VarlinkLimits()
    ) {
        listener = fileDescriptor
        self.limits = limits
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

    /// Starts accepting connections.
    public func start() {
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        let source = DispatchSource.makeReadSource(fileDescriptor: listener, queue: queue)
        source.setEventHandler { [weak self] in self?.acceptAll() }
        source.resume()
        state.withLock { $0.source = SourceBox(source) }
    }

    /// Stops accepting and closes every connection.
    public func stop() {
        let (source, connections) = state.withLock { state in
            defer {
                state.source = nil
                state.connections = [:]
            }
            return (state.source, Array(state.connections.values))
        }
        source?.cancel()
        queue.async {
            for connection in connections { connection.close() }
        }
    }

    /// Connections open now.
    public var connectionCount: Int {
        state.withLock { $0.connections.count }
    }

    private func acceptAll() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard connectionCount < limits.maximumConnections else {
                close(fd)
                continue
            }
            let connection = Connection(fd: fd, server: self, queue: queue, limits: limits)
            state.withLock { $0.connections[ObjectIdentifier(connection)] = connection }
            connection.start()
        }
    }

    func closed(_ connection: Connection) {
        state.withLock { _ = $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// Routes one call; runs on the server queue.
    func dispatch(_ call: VarlinkCall, peer: VarlinkPeer, replier: VarlinkReplier) {
        if call.interface == "org.varlink.service" {
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
        method(call, peer, replier)
    }

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
}
