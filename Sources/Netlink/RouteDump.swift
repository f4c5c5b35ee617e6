public import SystemSupport

/// What went wrong talking to rtnetlink: a system call, a malformed message, or a request the kernel refused.
public enum NetlinkError: Error, Equatable, CustomStringConvertible, Sendable {
    /// A system call failed.
    case system(SystemCallError)
    /// A message could not be parsed.
    case malformed(NetlinkParseError)
    /// The kernel answered a request with an error (errno).
    case refused(request: String, errno: Int32)
    /// Every attempt at a dump was interrupted by concurrent changes (NLM_F_DUMP_INTR).
    case dumpKeptChanging(request: String, attempts: Int)

    /// A sentence naming the request and the cause.
    public var description: String {
        switch self {
        case .system(let error): error.description
        case .malformed(let error): error.description
        case .refused(let request, let errno):
            "netlink: the kernel refused \(request): \(SystemCallError("netlink", operation: request, errno: errno).description)"
        case .dumpKeptChanging(let request, let attempts):
            "netlink: \(request) was interrupted by concurrent changes \(attempts) times in a row"
        }
    }
}

/// The kernel's links, addresses and default-capable routes at one moment.
public struct NetlinkSnapshot: Sendable, Equatable {
    /// Every link, in ifindex order.
    public var links: [NetlinkLink]
    /// Every IPv4 and IPv6 address.
    public var addresses: [NetlinkAddress]
    /// The IPv4 and IPv6 routes of the main table.
    public var routes: [NetlinkRoute]

    /// A snapshot of these values.
    public init(links: [NetlinkLink], addresses: [NetlinkAddress], routes: [NetlinkRoute]) {
        self.links = links
        self.addresses = addresses
        self.routes = routes
    }
}

/// Dumps links, addresses and routes from rtnetlink on a socket of its own.
///
/// A dump the kernel marks inconsistent (NLM_F_DUMP_INTR, because something changed while it was being written)
/// is repeated, up to `maximumAttempts` times. Calls block until the kernel has answered; use it off the event
/// loop's queue or accept a short wait (a dump of a few hundred links takes about a millisecond).
public struct RouteDumper: Sendable {
    /// How many times an interrupted dump is tried before giving up.
    public var maximumAttempts: Int

    /// A dumper that retries an interrupted dump up to `maximumAttempts` times.
    public init(maximumAttempts: Int = 5) {
        self.maximumAttempts = maximumAttempts
    }

    /// Every link.
    public func links() throws(NetlinkError) -> [NetlinkLink] {
        try dump(type: Kernel.RTM_GETLINK, family: 0, name: "RTM_GETLINK").compactMap { message in
            if case .newLink(let link) = message { return link }
            return nil
        }
    }

    /// Every IPv4 and IPv6 address.
    public func addresses() throws(NetlinkError) -> [NetlinkAddress] {
        try dump(type: Kernel.RTM_GETADDR, family: 0, name: "RTM_GETADDR").compactMap { message in
            if case .newAddress(let address) = message { return address }
            return nil
        }
    }

    /// The routes of the main table, of one family or (with `nil`) both.
    public func routes(family: AddressFamily? = nil) throws(NetlinkError) -> [NetlinkRoute] {
        let families = family.map { [$0] } ?? AddressFamily.allCases
        var routes: [NetlinkRoute] = []
        for family in families {
            let messages = try dump(type: Kernel.RTM_GETROUTE, family: family.kernelValue, name: "RTM_GETROUTE")
            for case .newRoute(let route) in messages where route.table == Kernel.RT_TABLE_MAIN {
                routes.append(route)
            }
        }
        return routes
    }

    /// Links, addresses and main-table routes.
    public func snapshot() throws(NetlinkError) -> NetlinkSnapshot {
        NetlinkSnapshot(links: try links(), addresses: try addresses(), routes: try routes())
    }

    private func dump(type: UInt16, family: UInt8, name: String) throws(NetlinkError) -> [RouteMessage] {
        let socket: NetlinkSocket
        do {
            socket = try NetlinkSocket(nonBlocking: false)
        } catch {
            throw .system(error)
        }
        for attempt in 1...max(1, maximumAttempts) {
            let sequence = UInt32(attempt)
            do {
                try socket.requestDump(type: type, family: family, sequence: sequence)
            } catch {
                throw .system(error)
            }
            var messages: [RouteMessage] = []
            var interrupted = false
            receiving: while true {
                let received: Received
                do {
                    received = try socket.receive()
                } catch {
                    throw .system(error)
                }
                guard case .bytes(let reader) = received else {
                    // A blocking dump socket reports ENOBUFS only if the reply itself overflowed: start over.
                    interrupted = true
                    break receiving
                }
                let parsed: ParsedBuffer
                do {
                    parsed = try RouteMessageParser.parseBuffer(reader)
                } catch {
                    throw .malformed(error)
                }
                if let code = parsed.errorCode {
                    throw .refused(request: name, errno: -code)
                }
                interrupted = interrupted || parsed.interrupted
                if parsed.sequences.contains(sequence) || parsed.sequences.isEmpty {
                    messages += parsed.messages
                }
                if parsed.done {
                    break receiving
                }
            }
            if !interrupted {
                return messages
            }
        }
        throw .dumpKeptChanging(request: name, attempts: maximumAttempts)
    }
}
