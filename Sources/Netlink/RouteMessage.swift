/// One rtnetlink message, decoded into a value: what the kernel said about a link, an address or a route.
public enum RouteMessage: Sendable, Equatable {
    /// RTM_NEWLINK: a link appeared or changed; carries its full state.
    case newLink(NetlinkLink)
    /// RTM_DELLINK: a link was removed.
    case deletedLink(NetlinkLink)
    /// RTM_NEWADDR: an address was added or changed.
    case newAddress(NetlinkAddress)
    /// RTM_DELADDR: an address was removed.
    case deletedAddress(NetlinkAddress)
    /// RTM_NEWROUTE: a route was added or changed.
    case newRoute(NetlinkRoute)
    /// RTM_DELROUTE: a route was removed.
    case deletedRoute(NetlinkRoute)
}

/// The messages in one received buffer, and what the framing said about them.
struct ParsedBuffer {
    var messages: [RouteMessage] = []
    /// An NLMSG_DONE ended a dump.
    var done = false
    /// A message had NLM_F_DUMP_INTR: the dump is inconsistent and must be repeated.
    var interrupted = false
    /// An NLMSG_ERROR with a non-zero code (a negative errno) answered a request.
    var errorCode: Int32?
    /// Sequence numbers of the messages.
    var sequences: Set<UInt32> = []
}

/// Decodes rtnetlink messages from received bytes.
public enum RouteMessageParser {
    /// The link, address and route messages in `bytes` (one datagram or several concatenated), in order.
    /// Messages of other types, and addresses or routes of families other than IPv4/IPv6, are skipped.
    public static func parse(_ bytes: [UInt8]) throws(NetlinkParseError) -> [RouteMessage] {
        try parseBuffer(bytes).messages
    }

    /// The messages in the first `count` bytes of `buffer`, read where they are, as the watcher reads a datagram in
    /// its receive buffer (whose bytes after `count` are left from earlier, longer datagrams and never read).
    public static func parse(_ buffer: [UInt8], count: Int) throws(NetlinkParseError) -> [RouteMessage] {
        try parseBuffer(ByteReader(bytes: buffer, count: min(max(count, 0), buffer.count))).messages
    }

    static func parseBuffer(_ bytes: [UInt8]) throws(NetlinkParseError) -> ParsedBuffer {
        try parseBuffer(ByteReader(bytes: bytes))
    }

    static func parseBuffer(_ reader: ByteReader) throws(NetlinkParseError) -> ParsedBuffer {
        var parsed = ParsedBuffer()
        for frame in try NetlinkFrame.split(reader) {
            parsed.sequences.insert(frame.sequence)
            if frame.flags & Kernel.NLM_F_DUMP_INTR != 0 {
                parsed.interrupted = true
            }
            switch frame.type {
            case Kernel.NLMSG_DONE:
                parsed.done = true
            case Kernel.NLMSG_ERROR:
                guard frame.payloadLength >= 4 else {
                    throw NetlinkParseError(
                        offset: frame.payloadOffset - Kernel.headerLength, reason: "NLMSG_ERROR without an error code")
                }
                let code = try reader.i32(at: frame.payloadOffset)
                if code != 0 {
                    parsed.errorCode = code
                }
            default:
                if let message = try message(reader, frame) { parsed.messages.append(message) }
            }
        }
        return parsed
    }

    /// Appends the link, address and route messages in `reader` (one datagram) to `messages`, as the watcher reads
    /// them: into an array it keeps from read to read, with no array or set made per datagram. A malformed
    /// datagram appends nothing.
    static func appendMessages(in reader: ByteReader, to messages: inout [RouteMessage]) throws(NetlinkParseError) {
        let frames = try NetlinkFrame.split(reader)
        let count = messages.count
        do throws(NetlinkParseError) {
            for frame in frames {
                if let message = try message(reader, frame) { messages.append(message) }
            }
        } catch {
            messages.removeSubrange(count...)
            throw error
        }
    }

    /// The message `frame` holds, if it is a link, or an IPv4/IPv6 address or route.
    private static func message(
        _ reader: ByteReader, _ frame: NetlinkFrame
    ) throws(NetlinkParseError) -> RouteMessage? {
        switch frame.type {
        case Kernel.RTM_NEWLINK: .newLink(try NetlinkLink.parse(reader, frame))
        case Kernel.RTM_DELLINK: .deletedLink(try NetlinkLink.parse(reader, frame))
        case Kernel.RTM_NEWADDR: try NetlinkAddress.parse(reader, frame).map(RouteMessage.newAddress)
        case Kernel.RTM_DELADDR: try NetlinkAddress.parse(reader, frame).map(RouteMessage.deletedAddress)
        case Kernel.RTM_NEWROUTE: try NetlinkRoute.parse(reader, frame).map(RouteMessage.newRoute)
        case Kernel.RTM_DELROUTE: try NetlinkRoute.parse(reader, frame).map(RouteMessage.deletedRoute)
        default: nil
        }
    }
}
