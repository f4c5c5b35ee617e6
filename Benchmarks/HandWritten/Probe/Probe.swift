// What the LinkedOwn/LinkedLibraries programs share: the reply they encode and the memory figures they print.
public import NetdevWire

#if canImport(Glibc)
import Glibc
#endif

/// The reply every program encodes: ListLinks' shape.
public struct LinkReportSample: Encodable {
    /// The links.
    public var links: [LinkReport]

    /// A reply with `links`.
    public init(links: [LinkReport]) {
        self.links = links
    }
}

/// The one link every program encodes, named by the command line's pattern.
public func sampleLink(named name: String?) -> LinkReport {
    LinkReport(
        index: 1, name: name ?? "lo", type: "loopback", macAddress: nil, mtu: 65536, operationalState: "carrier",
        addresses: ["127.0.0.1/8"], gateways: [])
}

/// Prints /proc/self/smaps_rollup, from which compare.sh reads RSS and the private part.
public func printMemory() {
    guard let file = fopen("/proc/self/smaps_rollup", "r") else { return }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        print(String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), terminator: "")
    }
}
