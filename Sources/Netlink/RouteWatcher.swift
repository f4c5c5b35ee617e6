import Locking
import SystemSupport

/// What one read of a ``RouteWatcher`` found.
public struct RouteWatchBatch: Sendable, Equatable {
    /// The messages received, in the order the kernel sent them.
    public var messages: [RouteMessage]
    /// `true` when messages were lost: the kernel dropped them because the receive buffer was full (ENOBUFS), or
    /// a datagram was longer than the watcher's 64 KiB buffer (which then grows). The caller's view of the kernel
    /// is now incomplete and must be rebuilt from a dump.
    public var overflowed: Bool
    /// Datagrams that could not be parsed; the others in the batch are still delivered.
    public var malformed: [NetlinkParseError]
    /// `true` when the socket had nothing more to read; `false` when the read stopped at its limit (or the
    /// batch was made, not read).
    public var drained = false

    /// A batch of these results.
    public init(messages: [RouteMessage] = [], overflowed: Bool = false, malformed: [NetlinkParseError] = []) {
        self.messages = messages
        self.overflowed = overflowed
        self.malformed = malformed
    }

    /// The messages a read appended, with what else it met.
    public init(messages: [RouteMessage], read: RouteWatchRead) {
        self.init(messages: messages, overflowed: read.overflowed, malformed: read.malformed)
        drained = read.drained
    }
}

/// Watches rtnetlink for link, IPv4/IPv6 address and IPv4/IPv6 route changes on a socket of its own.
///
/// The socket is non-blocking: wrap ``fileDescriptor`` in a level-triggered read source and call
/// ``readAvailable(upTo:)`` when it fires; it reads what is pending (at most as many datagrams as asked; the source
/// fires again for the rest), one `recv` per datagram, parsed where it was received. An overflow of the receive
/// buffer (ENOBUFS), or a datagram too long for the watcher's buffer, is reported in the batch, never swallowed.
/// The receive buffer is raised (to 128 MiB by default, with SO_RCVBUFFORCE when the process may) so that floods
/// rarely overflow.
public final class RouteWatcher: Sendable {
    private let socket: Locked<NetlinkSocket>

    /// The socket's file descriptor, for a Dispatch read source. Owned by the watcher.
    public let fileDescriptor: Int32

    /// Opens the socket and joins the link, address and route groups.
    public init(receiveBufferBytes: Int = 128 * 1024 * 1024) throws(NetlinkError) {
        let socket: NetlinkSocket
        do {
            socket = try NetlinkSocket(nonBlocking: true, receiveBufferBytes: receiveBufferBytes)
            for group in [
                Kernel.RTNLGRP_LINK, Kernel.RTNLGRP_IPV4_IFADDR, Kernel.RTNLGRP_IPV6_IFADDR,
                Kernel.RTNLGRP_IPV4_ROUTE, Kernel.RTNLGRP_IPV6_ROUTE,
            ] {
                try socket.join(group: group)
            }
        } catch {
            throw .system(error)
        }
        fileDescriptor = socket.fd
        self.socket = Locked(socket)
    }

    /// Reads the datagrams pending now, at most `maximum` of them, without blocking.
    public func readAvailable(upTo maximum: Int = .max) throws(NetlinkError) -> RouteWatchBatch {
        var messages: [RouteMessage] = []
        let read = try readAvailable(upTo: maximum, appendingTo: &messages)
        return RouteWatchBatch(messages: messages, read: read)
    }

    /// Reads the datagrams pending now, at most `maximum` of them, without blocking, and appends their messages to
    /// `messages`: an array the caller keeps from read to read grows once, not at every read. On a thrown error the
    /// messages appended so far stay in `messages`.
    public func readAvailable(
        upTo maximum: Int = .max, appendingTo messages: inout [RouteMessage]
    ) throws(NetlinkError) -> RouteWatchRead {
        let outcome: Result<RouteWatchRead, SystemCallError> = socket.withLock { socket in
            var read = RouteWatchRead()
            for _ in 0..<maximum {
                let received: Received
                do throws(SystemCallError) {
                    received = try socket.receive(exact: false)
                } catch {
                    return .failure(error)
                }
                switch received {
                case .nothing:
                    read.drained = true
                    return .success(read)
                case .overflow:
                    read.overflowed = true
                case .bytes(let reader):
                    do throws(NetlinkParseError) {
                        try RouteMessageParser.appendMessages(in: reader, to: &messages)
                    } catch {
                        read.malformed.append(error)
                    }
                }
            }
            return .success(read)
        }
        switch outcome {
        case .success(let read): return read
        case .failure(let error): throw .system(error)
        }
    }
}

/// What one read of a ``RouteWatcher`` met besides the messages it appended.
public struct RouteWatchRead: Sendable, Equatable {
    /// `true` when messages were lost (as in ``RouteWatchBatch/overflowed``): the view must be rebuilt from a dump.
    public var overflowed = false
    /// Datagrams that could not be parsed; the others are still appended.
    public var malformed: [NetlinkParseError] = []
    /// `true` when the socket had nothing more to read; `false` when the read stopped at its limit.
    public var drained = false

    /// A read that met nothing yet.
    public init() {}
}
