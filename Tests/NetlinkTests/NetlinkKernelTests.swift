import Foundation
import KernelTestSupport
import Netlink
import Testing

/// A change as a test describes it, in the order it must be seen.
private enum Change: Equatable, CustomStringConvertible {
    case linkAdded(String)
    case linkUp(String)
    case addressAdded(String)
    case addressRemoved(String)
    case routeAdded(String)
    case linkRemoved(String)

    var description: String {
        switch self {
        case .linkAdded(let name): "link \(name) added"
        case .linkUp(let name): "link \(name) up"
        case .addressAdded(let cidr): "address \(cidr) added"
        case .addressRemoved(let cidr): "address \(cidr) removed"
        case .routeAdded(let route): "route \(route) added"
        case .linkRemoved(let name): "link \(name) removed"
        }
    }
}

/// Turns the watcher's messages about `name` (and its addresses and routes) into the changes they mean, dropping
/// repeats of the same state (the kernel sends several RTM_NEWLINK as a link comes up).
private func changes(_ messages: [RouteMessage], name: String, index: Int32) -> [Change] {
    var seen: [Change] = []
    var known = false
    for message in messages {
        let change: Change?
        switch message {
        case .newLink(let link) where link.name == name:
            if !known {
                known = true
                change = .linkAdded(name)
            } else {
                change = link.flags.contains(.up) && link.operationalState == .up ? .linkUp(name) : nil
            }
        case .deletedLink(let link) where link.name == name:
            change = .linkRemoved(name)
        case .newAddress(let address) where address.interfaceIndex == index && address.scope == 0:
            change = .addressAdded(address.cidr)
        case .deletedAddress(let address) where address.interfaceIndex == index && address.scope == 0:
            change = .addressRemoved(address.cidr)
        case .newRoute(let route) where route.outputInterfaceIndex == index && route.isDefault:
            change = .routeAdded("default via \(route.gateway ?? "-")")
        default:
            change = nil
        }
        if let change, !seen.contains(change) {
            seen.append(change)
        }
    }
    return seen
}

@Suite("Netlink against the kernel", .serialized, .tags(.kernel), KernelHarness.enabled)
struct NetlinkKernelTests {
    @Test("dumps match `ip -j link show` and `ip -j addr show`")
    func dumpsMatchIP() throws {
        try ip("link", "add", "dump0", "type", "veth", "peer", "name", "dump1")
        defer { _ = try? ip("link", "del", "dump0") }
        try ip("link", "set", "dump0", "address", "02:00:00:00:aa:01", "mtu", "1400", "up")
        try ip("link", "set", "dump1", "up")
        try ip("addr", "add", "192.0.2.20/24", "dev", "dump0")
        try ip("-6", "addr", "add", "2001:db8::20/64", "dev", "dump0", "nodad")
        let links = try RouteDumper().links()
        let ipLinks = try jsonObjects(ip("-j", "link", "show"))
        #expect(links.map(\.name) == ipLinks.map { $0["ifname"] as? String ?? "?" })
        for (link, ipLink) in zip(links, ipLinks) {
            #expect(Int(link.index) == ipLink["ifindex"] as? Int)
            #expect(link.macAddress == ipLink["address"] as? String)
            #expect(link.mtu.map(Int.init) == ipLink["mtu"] as? Int)
        }
        let addresses = try RouteDumper().addresses().map { "\($0.interfaceIndex) \($0.cidr)" }
        let ipAddresses = try jsonObjects(ip("-j", "addr", "show")).flatMap { link in
            (link["addr_info"] as? [[String: Any]] ?? []).map {
                "\(link["ifindex"] as? Int ?? -1) \($0["local"] as? String ?? "?")/\($0["prefixlen"] as? Int ?? -1)"
            }
        }
        #expect(addresses.sorted() == ipAddresses.sorted())
    }

    @Test("the watcher sees a veth come up, get addresses and a default route, and go, in that order")
    func watcherOrder() throws {
        let watcher = try RouteWatcher()
        try ip("link", "add", "watch0", "type", "veth", "peer", "name", "watch1")
        try ip("link", "set", "watch1", "up")
        try ip("link", "set", "watch0", "up")
        try ip("addr", "add", "198.51.100.1/24", "dev", "watch0")
        try ip("-6", "addr", "add", "2001:db8:5::1/64", "dev", "watch0", "nodad")
        try ip("route", "add", "default", "via", "198.51.100.254", "dev", "watch0")
        try ip("addr", "del", "198.51.100.1/24", "dev", "watch0")
        let index = try #require(
            Int32(
                ip("-j", "link", "show", "watch0").split(separator: "\"ifindex\":").last?.prefix { $0.isNumber } ?? ""))
        try ip("link", "del", "watch0")
        var messages: [RouteMessage] = []
        _ = try waitUntil {
            let batch = try watcher.readAvailable()
            #expect(!batch.overflowed)
            #expect(batch.malformed.isEmpty)
            messages += batch.messages
            return changes(messages, name: "watch0", index: index).contains(.linkRemoved("watch0"))
        }
        #expect(
            changes(messages, name: "watch0", index: index) == [
                .linkAdded("watch0"), .linkUp("watch0"), .addressAdded("198.51.100.1/24"),
                .addressAdded("2001:db8:5::1/64"), .routeAdded("default via 198.51.100.254"),
                .addressRemoved("198.51.100.1/24"),
                // Deleting a link removes its remaining addresses first, and the kernel says so.
                .addressRemoved("2001:db8:5::1/64"), .linkRemoved("watch0"),
            ]
        )
    }

    @Test("a read takes at most the datagrams asked for; the next read goes on where it stopped, nothing lost")
    func boundedReads() throws {
        let watcher = try RouteWatcher()
        try ipBatch((0..<10).map { "link add wbound\($0)a type veth peer name wbound\($0)b" })
        defer { _ = try? ipBatch((0..<10).map { "link del wbound\($0)a" }) }
        var added: [String] = []
        var largest = 0
        _ = try waitUntil {
            let batch = try watcher.readAvailable(upTo: 3)
            largest = max(largest, batch.messages.count)
            for case .newLink(let link) in batch.messages
            where link.name.hasPrefix("wbound") && !added.contains(link.name) {
                added.append(link.name)
            }
            return added.count >= 20
        }
        #expect(largest == 3)
        #expect(added.sorted() == (0..<10).flatMap { ["wbound\($0)a", "wbound\($0)b"] }.sorted())
    }

    @Test("the watcher sees a tap added, set up (no carrier, so still down), set down, and deleted")
    func tapUpAndDown() throws {
        let watcher = try RouteWatcher()
        try ip("tuntap", "add", "dev", "wtap0", "mode", "tap")
        try ip("link", "set", "wtap0", "up")
        try ip("link", "set", "wtap0", "down")
        try ip("tuntap", "del", "dev", "wtap0", "mode", "tap")
        var states: [String] = []
        var removed = false
        _ = try waitUntil {
            for message in try watcher.readAvailable().messages {
                switch message {
                case .newLink(let link) where link.name == "wtap0":
                    let state = "\(link.flags.contains(.up) ? "up" : "down") \(link.operationalState.kernelName)"
                    if states.last != state {
                        states.append(state)
                    }
                    #expect(link.kind == "tun")
                case .deletedLink(let link) where link.name == "wtap0":
                    removed = true
                default:
                    break
                }
            }
            return removed
        }
        #expect(states == ["down DOWN", "up DOWN", "down DOWN"])
        #expect(removed)
    }

    @Test("a flood of 300 veth pairs into a small receive buffer is reported as an overflow")
    func overflow() throws {
        let watcher = try RouteWatcher(receiveBufferBytes: 4096)
        try ipBatch((0..<300).map { "link add nflood\($0)a type veth peer name nflood\($0)b" })
        defer { _ = try? ipBatch((0..<300).map { "link del nflood\($0)a" }) }
        var overflowed = false
        var received = 0
        _ = try waitUntil(timeout: 2) {
            let batch = try watcher.readAvailable()
            overflowed = overflowed || batch.overflowed
            received += batch.messages.count
            return overflowed
        }
        #expect(overflowed, "received \(received) messages without an overflow being reported")
    }

    @Test("an address dump the kernel interrupts on every try: addresses() throws, snapshot() keeps it and names it")
    func changingDumpIsKept() throws {
        try ipBatch(["link add churn0 type veth peer name churn0p", "link add churn1 type veth peer name churn1p"])
        defer { _ = try? ipBatch(["link del churn0", "link del churn1"]) }
        // Enough addresses that a dump takes several reads, and another link's address coming and going meanwhile.
        try ipBatch((0..<2_000).map { "addr add 10.\($0 / 250).\($0 % 250).1/32 dev churn0" })
        let churn = try AddressChurn(link: "churn1")
        defer { churn.stop() }
        let dumper = RouteDumper(maximumAttempts: 1)
        var thrown: NetlinkError?
        var kept: NetlinkSnapshot?
        for _ in 0..<500 where thrown == nil || kept == nil {
            do {
                _ = try dumper.addresses()
            } catch {
                thrown = error
            }
            let snapshot = try dumper.snapshot()
            if !snapshot.changedWhileRead.isEmpty { kept = snapshot }
        }
        #expect(thrown == .dumpKeptChanging(request: "RTM_GETADDR", attempts: 1))
        let snapshot = try #require(kept, "500 snapshots while an address came and went, none interrupted")
        #expect(snapshot.changedWhileRead == ["RTM_GETADDR"])
        #expect(snapshot.links.contains { $0.name == "churn0" })
        #expect(snapshot.addresses.count > 100, "the last reading is kept, not dropped")
        churn.stop()
        // Quiet again: consistent, and every address is there.
        let quiet = try RouteDumper().snapshot()
        #expect(quiet.changedWhileRead.isEmpty)
        #expect(quiet.addresses.filter { $0.cidr.hasPrefix("10.") }.count == 2_000)
    }
}
