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
    /// The requests (`RTM_GETADDR`, ...) whose every attempt the kernel marked interrupted: their values are the last
    /// attempt's, which may lack an entry that did not change. Empty when every dump was consistent.
    public var changedWhileRead: [String]

    /// A snapshot of these values.
    public init(
        links: [NetlinkLink], addresses: [NetlinkAddress], routes: [NetlinkRoute], changedWhileRead: [String] = []
    ) {
        self.links = links
        self.addresses = addresses
        self.routes = routes
        self.changedWhileRead = changedWhileRead
    }
}

/// Dumps links, addresses and routes from rtnetlink on a socket of its own.
///
/// A dump the kernel marks inconsistent (NLM_F_DUMP_INTR, because something changed while it was being written)
/// is repeated, up to `maximumAttempts` times; then `links()`, `addresses()` and `routes()` throw, and `snapshot()`
/// keeps the last attempt and says so. Calls block until the kernel has answered; use it off the event
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
        try consistent(readLinks())
    }

    /// Every IPv4 and IPv6 address.
    public func addresses() throws(NetlinkError) -> [NetlinkAddress] {
        try consistent(readAddresses())
    }

    /// The routes of the main table, of one family or (with `nil`) both.
    public func routes(family: AddressFamily? = nil) throws(NetlinkError) -> [NetlinkRoute] {
        try consistent(readRoutes(family: family))
    }

    /// Links, addresses and main-table routes. A dump interrupted on every attempt does not fail it: its last attempt
    /// is kept and named in ``NetlinkSnapshot/changedWhileRead``. Each change that interrupted it is also sent to
    /// the watchers (``RouteWatcher``), so a reader that applies those after the snapshot holds every changed entry;
    /// what such a snapshot may lack is an entry that did not change, and reading again when the kernel is quieter
    /// finds it.
    public func snapshot() throws(NetlinkError) -> NetlinkSnapshot {
        let links = try readLinks()
        let addresses = try readAddresses()
        let routes = try readRoutes(family: nil)
        return NetlinkSnapshot(
            links: links.values, addresses: addresses.values, routes: routes.values,
            changedWhileRead: [links.interruptedRequest, addresses.interruptedRequest, routes.interruptedRequest]
                .compactMap { $0 })
    }

    /// What one request's dump read, and whether every attempt was interrupted.
    private struct Dumped<Value> {
        var values: [Value]
        /// The request, when its last attempt was interrupted too.
        var interruptedRequest: String?
    }

    private func consistent<Value>(_ dumped: Dumped<Value>) throws(NetlinkError) -> [Value] {
        if let request = dumped.interruptedRequest {
            throw .dumpKeptChanging(request: request, attempts: max(1, maximumAttempts))
        }
        return dumped.values
    }

    private func readLinks() throws(NetlinkError) -> Dumped<NetlinkLink> {
        try read(Kernel.RTM_GETLINK, "RTM_GETLINK") { message in
            if case .newLink(let link) = message { link } else { nil }
        }
    }

    private func readAddresses() throws(NetlinkError) -> Dumped<NetlinkAddress> {
        try read(Kernel.RTM_GETADDR, "RTM_GETADDR") { message in
            if case .newAddress(let address) = message { address } else { nil }
        }
    }

    /// The values `pick` finds in the dump of `type` (both address families).
    private func read<Value>(
        _ type: UInt16, _ name: String, _ pick: (RouteMessage) -> Value?
    ) throws(NetlinkError) -> Dumped<Value> {
        let dumped = try dump(type: type, family: 0, name: name)
        return Dumped(values: dumped.values.compactMap(pick), interruptedRequest: dumped.interruptedRequest)
    }

    private func readRoutes(family: AddressFamily?) throws(NetlinkError) -> Dumped<NetlinkRoute> {
        var routes = Dumped<NetlinkRoute>(values: [])
        for family in family.map({ [$0] }) ?? AddressFamily.allCases {
            let dumped = try dump(type: Kernel.RTM_GETROUTE, family: family.kernelValue, name: "RTM_GETROUTE")
            for case .newRoute(let route) in dumped.values where route.table == Kernel.RT_TABLE_MAIN {
                routes.values.append(route)
            }
            routes.interruptedRequest = routes.interruptedRequest ?? dumped.interruptedRequest
        }
        return routes
    }

    /// The dump's messages: of the first attempt the kernel did not interrupt, else of the last attempt (with the
    /// request named).
    private func dump(type: UInt16, family: UInt8, name: String) throws(NetlinkError) -> Dumped<RouteMessage> {
        let socket: NetlinkSocket
        do {
            socket = try NetlinkSocket(nonBlocking: false)
        } catch {
            throw .system(error)
        }
        var messages: [RouteMessage] = []
        for attempt in 1...max(1, maximumAttempts) {
            let sequence = UInt32(attempt)
            do {
                try socket.requestDump(type: type, family: family, sequence: sequence)
            } catch {
                throw .system(error)
            }
            messages = []
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
                return Dumped(values: messages)
            }
        }
        return Dumped(values: messages, interruptedRequest: name)
    }
}
