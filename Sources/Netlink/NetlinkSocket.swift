#if canImport(Glibc)
import SystemSupport
import Glibc
#endif

/// What a read from a netlink socket produced.
enum Received {
    /// One datagram, read where it was received.
    case bytes(ByteReader)
    /// Nothing pending (EAGAIN on a non-blocking socket).
    case nothing
    /// ENOBUFS: the kernel dropped messages because the receive buffer was full.
    case overflow
}

/// An AF_NETLINK / NETLINK_ROUTE socket: open, subscribe, send a request, receive whole datagrams.
///
/// Owns its file descriptor and closes it on deinit. Not shared between threads.
final class NetlinkSocket {
    let fd: Int32
    private var buffer: [UInt8]

    init(nonBlocking: Bool, receiveBufferBytes: Int? = nil) throws(SystemCallError) {
        var type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking {
            type |= Int32(SOCK_NONBLOCK.rawValue)
        }
        let fd = socket(Kernel.AF_NETLINK, type, Kernel.NETLINK_ROUTE)
        guard fd >= 0 else { throw SystemCallError("netlink", operation: "socket(AF_NETLINK)", errno: errno) }
        self.fd = fd
        buffer = [UInt8](repeating: 0, count: 64 * 1024)
        // Kernel-assigned port id; no groups yet.
        var address = [UInt8](repeating: 0, count: 12)
        address[0] = UInt8(Kernel.AF_NETLINK & 0xFF)
        let bound = address.withUnsafeBytes { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else {
            let error = SystemCallError("netlink", operation: "bind(AF_NETLINK)", errno: errno)
            close(fd)
            throw error
        }
        if let receiveBufferBytes {
            try setReceiveBuffer(receiveBufferBytes)
        }
    }

    deinit {
        close(fd)
    }

    /// Sets SO_RCVBUF (SO_RCVBUFFORCE when permitted, which may exceed rmem_max).
    func setReceiveBuffer(_ bytes: Int) throws(SystemCallError) {
        var size = Int32(clamping: bytes)
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) == 0 {
            return
        }
        guard setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SystemCallError("netlink", operation: "setsockopt(SO_RCVBUF)", errno: errno)
        }
    }

    /// Joins a multicast group (RTNLGRP_*).
    func join(group: Int32) throws(SystemCallError) {
        var group = group
        guard
            setsockopt(
                fd, Kernel.SOL_NETLINK, Kernel.NETLINK_ADD_MEMBERSHIP, &group, socklen_t(MemoryLayout<Int32>.size))
                == 0
        else {
            throw SystemCallError("netlink", operation: "setsockopt(NETLINK_ADD_MEMBERSHIP \(group))", errno: errno)
        }
    }

    /// Sends a dump request of `type` (RTM_GETLINK, ...) for `family` with sequence number `sequence`.
    func requestDump(type: UInt16, family: UInt8, sequence: UInt32) throws(SystemCallError) {
        // nlmsghdr + a zeroed family header (rtgenmsg is one byte; ifinfomsg-sized covers every request).
        let payloadLength = type == Kernel.RTM_GETROUTE ? Kernel.rtmsgLength : Kernel.ifinfomsgLength
        var message = [UInt8](repeating: 0, count: Kernel.headerLength + payloadLength)
        func put32(_ value: UInt32, at offset: Int) {
            withUnsafeBytes(of: value) { message.replaceSubrange(offset..<offset + 4, with: $0) }
        }
        func put16(_ value: UInt16, at offset: Int) {
            withUnsafeBytes(of: value) { message.replaceSubrange(offset..<offset + 2, with: $0) }
        }
        put32(UInt32(message.count), at: 0)
        put16(type, at: 4)
        put16(Kernel.NLM_F_REQUEST | Kernel.NLM_F_DUMP, at: 6)
        put32(sequence, at: 8)
        message[Kernel.headerLength] = family
        let sent = message.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == message.count else {
            throw SystemCallError("netlink", operation: "send(dump request)", errno: errno)
        }
    }

    /// Receives one datagram into the socket's buffer and reads it there, with no copy: the reader is valid until
    /// the next receive (held past it, the buffer is copied before that receive writes).
    ///
    /// `exact` (a dump's replies): the datagram's length is asked first (MSG_PEEK with MSG_TRUNC), and a datagram
    /// longer than the buffer grows it before it is read, so none is ever cut. Otherwise (the watcher's
    /// notifications, thousands in a burst) one `recv` with MSG_TRUNC, which returns the datagram's whole length:
    /// one longer than the buffer (64 KiB; a notification carries one message, a few KiB for a link) has lost its
    /// tail, so the buffer grows to hold the next such one and the loss is reported as ``Received/overflow``, as
    /// the kernel's own drops are: the caller rebuilds its view from a dump.
    func receive(exact: Bool = true) throws(SystemCallError) -> Received {
        if exact {
            switch try receiveOnce(flags: Int32(MSG_PEEK | MSG_TRUNC)) {
            case .length(let peeked):
                if peeked > buffer.count {
                    buffer = [UInt8](repeating: 0, count: peeked)
                }
            case .other(let received):
                return received
            }
        }
        switch try receiveOnce(flags: exact ? 0 : Int32(MSG_TRUNC)) {
        case .length(let count):
            if count > buffer.count {
                buffer = [UInt8](repeating: 0, count: count)
                return .overflow
            }
            return .bytes(ByteReader(bytes: buffer, count: count))
        case .other(let received):
            return received
        }
    }

    /// What one `recv` into the buffer gave.
    private enum Attempt {
        /// The datagram's length (its whole length with MSG_TRUNC, though the buffer may be shorter).
        case length(Int)
        /// Nothing to read, or the kernel's drops (``Received/nothing``, ``Received/overflow``).
        case other(Received)
    }

    /// One `recv` into the buffer with `flags`, repeated when a signal interrupts it.
    private func receiveOnce(flags: Int32) throws(SystemCallError) -> Attempt {
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in recv(fd, raw.baseAddress, raw.count, flags) }
            if count >= 0 { return .length(count) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .other(.nothing)
            case ENOBUFS: return .other(.overflow)
            default: throw SystemCallError("netlink", operation: "recv", errno: errno)
            }
        }
    }
}
