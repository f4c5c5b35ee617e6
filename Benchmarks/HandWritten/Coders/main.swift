// Times netdevd's own JSON coder (JSONCoding) against FoundationEssentials' JSONEncoder and JSONDecoder on what
// netdevd encodes and decodes most: a ListLinks reply (1,000 and 20,000 links) and Varlink calls (100,000).
// The median of 7 rounds each, in milliseconds. Run by `make benchmark-handwritten`.
import FoundationEssentials
import JSONCoding
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// The reply ListLinks sends.
struct Reply: Codable {
    var links: [LinkReport]
}

func links(_ count: Int) -> Reply {
    Reply(
        links: (0..<count).map { index in
            LinkReport(
                index: index + 1, name: "veth\(index)", type: "veth",
                macAddress: "02:00:00:\(String(index >> 16 & 255, radix: 16)):\(String(index >> 8 & 255, radix: 16)):"
                    + String(index & 255, radix: 16),
                mtu: 1500, operationalState: index % 3 == 0 ? "routable" : "carrier",
                addresses: index % 3 == 0 ? ["10.\(index >> 16 & 255).\(index >> 8 & 255).\(index & 255)/16"] : [],
                gateways: [])
        })
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    var rounds: [Double] = []
    for _ in 0..<7 {
        var start = timespec()
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        try body()
        clock_gettime(CLOCK_MONOTONIC, &end)
        rounds.append(Double(end.tv_sec - start.tv_sec) * 1e3 + Double(end.tv_nsec - start.tv_nsec) / 1e6)
    }
    return rounds.sorted()[3]
}

func padded(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}

func figure(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

func row(_ what: String, own: Double, library: Double) {
    let ratio = Int((library / own * 100).rounded())
    print(
        padded(what, 34) + padded(figure(own) + " ms", 14) + padded(figure(library) + " ms", 14)
            + "\(ratio / 100).\(ratio % 100 < 10 ? "0" : "")\(ratio % 100)x")
}

print(padded("what", 34) + padded("JSONCoding", 14) + padded("Foundation", 14) + "Foundation / JSONCoding")
for count in [1_000, 20_000] {
    let reply = links(count)
    var own: [UInt8] = []
    var library = Data()
    let ownTime = try milliseconds { own = try JSONTextEncoder().encode(reply) }
    let libraryTime = try milliseconds { library = try JSONEncoder().encode(reply) }
    // Both texts must say the same: decoded by the other coder, the same reply.
    let ownRead = try JSONDecoder().decode(Reply.self, from: Data(own))
    let libraryRead = try JSONTextDecoder().decode(Reply.self, from: [UInt8](library))
    precondition(ownRead.links == reply.links && libraryRead.links == reply.links)
    row("encode ListLinks, \(count) links", own: ownTime, library: libraryTime)
}
let calls = (0..<100_000).map { index -> [UInt8] in
    Array(#"{"method":"io.netdevd.ListLinks","parameters":{"pattern":"veth\#(index)*"},"more":false}"#.utf8)
}
let callData = calls.map { Data($0) }
var decoded = 0
let ownDecode = try milliseconds {
    for call in calls { decoded &+= try JSONTextDecoder().decode(VarlinkCall.self, from: call).method.utf8.count }
}
let libraryDecode = try milliseconds {
    for call in callData { decoded &+= try JSONDecoder().decode(VarlinkCall.self, from: call).method.utf8.count }
}
row("decode 100,000 Varlink calls", own: ownDecode, library: libraryDecode)
precondition(decoded > 0)
