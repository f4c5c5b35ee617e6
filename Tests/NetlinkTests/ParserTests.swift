import Foundation
import KernelTestSupport
import Netlink
import Testing

/// The bytes of a fixture captured from this kernel (see Fixtures/README.md).
func fixture(_ name: String) throws -> [UInt8] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    return Array(try Data(contentsOf: url))
}

@Suite("Netlink parser on captured messages")
struct ParserTests {
    @Test("a link dump gives every link with name, kind, MAC, MTU, flags and operational state")
    func linkDump() throws {
        let links = try RouteMessageParser.parse(fixture("link-dump.bin")).compactMap { message -> NetlinkLink? in
            if case .newLink(let link) = message { return link }
            return nil
        }
        #expect(links.map(\.name) == ["lo", "veth0", "veth1", "tap0"])
        #expect(links.map(\.index) == [1, 2, 3, 4])
        #expect(links.map(\.kind) == [nil, "veth", "veth", "tun"])
        #expect(
            links.map(\.macAddress) == [
                "00:00:00:00:00:00", "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03",
            ])
        #expect(links.map(\.mtu) == [65536, 1400, 1500, 1500])
        #expect(links.map(\.operationalState) == [.unknown, .up, .up, .down])
        #expect(links[0].flags.contains([.loopback, .up, .lowerUp]))
        #expect(links[1].flags.contains([.up, .lowerUp, .broadcast, .multicast]))
        #expect(!links[3].flags.contains(.up))
        #expect(links.map(\.carrier) == [true, true, true, false])
        #expect(links.map(\.hardwareType) == [772, 1, 1, 1])
    }

    @Test("the dumps agree with `ip -j link show` and `ip -j addr show` captured at the same time")
    func agreesWithIP() throws {
        let ipLinks = try JSONSerialization.jsonObject(with: Data(fixture("ip-link.json"))) as? [[String: Any]] ?? []
        let links = try RouteMessageParser.parse(fixture("link-dump.bin")).compactMap { message -> NetlinkLink? in
            if case .newLink(let link) = message { return link }
            return nil
        }
        #expect(links.count == ipLinks.count)
        for (link, ipLink) in zip(links, ipLinks) {
            #expect(Int(link.index) == ipLink["ifindex"] as? Int)
            #expect(link.name == ipLink["ifname"] as? String)
            #expect(link.macAddress == ipLink["address"] as? String)
            #expect(link.mtu.map(Int.init) == ipLink["mtu"] as? Int)
            #expect(link.operationalState.kernelName == ipLink["operstate"] as? String)
        }
        let ipAddresses =
            try JSONSerialization.jsonObject(with: Data(fixture("ip-addr.json"))) as? [[String: Any]] ?? []
        let expected = ipAddresses.flatMap { link in
            (link["addr_info"] as? [[String: Any]] ?? []).map {
                "\(link["ifindex"] as? Int ?? -1) \($0["local"] as? String ?? "?")/\($0["prefixlen"] as? Int ?? -1)"
            }
        }
        let addresses = try RouteMessageParser.parse(fixture("addr-dump.bin")).compactMap { message -> String? in
            if case .newAddress(let address) = message { return "\(address.interfaceIndex) \(address.cidr)" }
            return nil
        }
        #expect(addresses.sorted() == expected.sorted())
    }

    @Test("an address dump gives family, prefix, scope and flags")
    func addressDump() throws {
        let addresses = try RouteMessageParser.parse(fixture("addr-dump.bin")).compactMap {
            message -> NetlinkAddress? in
            if case .newAddress(let address) = message { return address }
            return nil
        }
        let v4 = try #require(addresses.first { $0.address == "192.0.2.10" })
        #expect(v4.family == .ipv4 && v4.prefixLength == 24 && v4.interfaceIndex == 2 && v4.scope == 0)
        #expect(v4.flags.contains(.permanent))
        #expect(v4.label == "veth0")
        let v6 = try #require(addresses.first { $0.address == "2001:db8::10" })
        #expect(v6.family == .ipv6 && v6.prefixLength == 64 && v6.flags.contains([.permanent, .noDAD]))
        #expect(!v6.flags.contains(.tentative))
        let linkLocal = try #require(addresses.first { $0.address == "fe80::ff:fe00:1" })
        #expect(linkLocal.scope == 253)
    }

    @Test("a route dump gives the default route with gateway, output interface, metric and table")
    func routeDump() throws {
        let routes = try RouteMessageParser.parse(fixture("route-dump.bin")).compactMap { message -> NetlinkRoute? in
            if case .newRoute(let route) = message { return route }
            return nil
        }
        let defaults = routes.filter(\.isDefault)
        #expect(defaults.count == 1)
        #expect(defaults.first?.gateway == "192.0.2.1")
        #expect(defaults.first?.outputInterfaceIndex == 2)
        #expect(defaults.first?.metric == 100)
        let connected = try #require(routes.first { $0.destination == "192.0.2.0" && $0.table == 254 })
        #expect(connected.destinationPrefixLength == 24 && connected.gateway == nil)
        let routes6 = try RouteMessageParser.parse(fixture("route6-dump.bin")).compactMap { message -> NetlinkRoute? in
            if case .newRoute(let route) = message { return route }
            return nil
        }
        let default6 = try #require(routes6.first { $0.isDefault })
        #expect(default6.family == .ipv6 && default6.gateway == "2001:db8::1" && default6.metric == 200)
    }

    @Test("notifications decode to their kind of change")
    func notifications() throws {
        let newLink = try RouteMessageParser.parse(fixture("newlink.bin"))
        #expect(newLink.contains { if case .newLink(let link) = $0 { link.name == "vx0" } else { false } })
        #expect(try RouteMessageParser.parse(fixture("newaddr4.bin")).count == 1)
        #expect(try RouteMessageParser.parse(fixture("newaddr4.bin")).first.flatMap(address)?.cidr == "198.51.100.7/24")
        let deleted = try RouteMessageParser.parse(fixture("deladdr4.bin"))
        #expect(deleted.count == 1)
        if case .deletedAddress(let address) = deleted.first {
            #expect(address.cidr == "198.51.100.7/24")
        } else {
            Issue.record("expected a deleted address, got \(deleted)")
        }
        #expect(
            try RouteMessageParser.parse(fixture("newaddr6.bin")).first.flatMap(address)?.cidr == "2001:db8:1::7/64")
        let route = try RouteMessageParser.parse(fixture("newroute.bin"))
        if case .newRoute(let added) = route.first {
            #expect(added.destination == "203.0.113.0" && added.destinationPrefixLength == 24)
        } else {
            Issue.record("expected a new route, got \(route)")
        }
        let dellink = try RouteMessageParser.parse(fixture("dellink.bin"))
        #expect(dellink.contains { if case .deletedLink(let link) = $0 { link.name == "vx0" } else { false } })
    }
}

private func address(_ message: RouteMessage) -> NetlinkAddress? {
    switch message {
    case .newAddress(let address), .deletedAddress(let address): address
    default: nil
    }
}

@Suite("Netlink parser on malformed input")
struct MalformedInputTests {
    @Test("every truncation of a captured dump is an error naming an offset inside the buffer, never a crash")
    func truncations() throws {
        let bytes = try fixture("link-dump.bin")
        let messageEnds = messageBoundaries(bytes)
        for length in 1..<bytes.count where !messageEnds.contains(length) {
            #expect(throws: NetlinkParseError.self) { try RouteMessageParser.parse(Array(bytes.prefix(length))) }
            do {
                _ = try RouteMessageParser.parse(Array(bytes.prefix(length)))
            } catch {
                #expect(error.offset >= 0 && error.offset <= length)
            }
        }
    }

    @Test("a message length past the end, shorter than a header, or an attribute overrunning its message")
    func corruptLengths() throws {
        var bytes = try fixture("newaddr4.bin")
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(4096), toByteOffset: 0, as: UInt32.self) }
        #expect(
            throws: NetlinkParseError(
                offset: 0, reason: "message length 4096 runs past the end of the buffer (76 bytes left)")
        ) {
            try RouteMessageParser.parse(bytes)
        }
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(8), toByteOffset: 0, as: UInt32.self) }
        #expect(throws: NetlinkParseError(offset: 0, reason: "message length 8 is shorter than its header")) {
            try RouteMessageParser.parse(bytes)
        }
        var attribute = try fixture("newaddr4.bin")
        // The first attribute starts after the 16-byte header and the 8-byte ifaddrmsg.
        attribute.withUnsafeMutableBytes { $0.storeBytes(of: UInt16(200), toByteOffset: 24, as: UInt16.self) }
        #expect(throws: NetlinkParseError.self) { try RouteMessageParser.parse(attribute) }
        attribute.withUnsafeMutableBytes { $0.storeBytes(of: UInt16(2), toByteOffset: 24, as: UInt16.self) }
        #expect(throws: NetlinkParseError(offset: 24, reason: "attribute length 2 is shorter than 4")) {
            try RouteMessageParser.parse(attribute)
        }
    }

    @Test(
        "random corruption of captured messages: each is read or refused with a place inside it, the same in place")
    func randomCorruption() throws {
        var generator = SeededGenerator(seed: 0x6e65_7464_6576_64)
        var (read, refused) = (0, 0)
        for name in ["link-dump.bin", "addr-dump.bin", "route-dump.bin", "newlink.bin", "dellink.bin"] {
            let original = try fixture(name)
            for _ in 0..<500 {
                var bytes = original
                for _ in 0..<Int(generator.next() % 4 + 1) {
                    bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
                }
                let parsed = Result { () throws(NetlinkParseError) in try RouteMessageParser.parse(bytes) }
                // Read in a receive buffer holding stale bytes after the datagram, as the watcher reads it: the
                // same messages, or the same error.
                let stale = bytes + original
                let inPlace = Result { () throws(NetlinkParseError) in
                    try RouteMessageParser.parse(stale, count: bytes.count)
                }
                #expect(parsed == inPlace, "\(name): read apart and in place differ")
                switch parsed {
                case .success: read += 1
                case .failure(let error):
                    refused += 1
                    #expect((0..<bytes.count).contains(error.offset) && !error.reason.isEmpty, "\(name): \(error)")
                }
            }
        }
        // Both outcomes are exercised, or the checks above say little.
        #expect(read > 100 && refused > 100, "read \(read), refused \(refused)")
    }
}

/// Offsets at which a message ends (where a truncated buffer is still well-formed).
private func messageBoundaries(_ bytes: [UInt8]) -> Set<Int> {
    var ends: Set<Int> = []
    var offset = 0
    while offset + 4 <= bytes.count {
        let length = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
        guard length >= 16 else { break }
        offset += (length + 3) & ~3
        ends.insert(offset)
    }
    return ends
}
