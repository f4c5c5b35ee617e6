// LinkedOwn's twin: the same reply encoded with FoundationEssentials' JSONEncoder and the same command line parsed with
// swift-argument-parser; prints its private memory (USS) from /proc/self/smaps_rollup.
import ArgumentParser
import FoundationEssentials
import NetdevWire

#if canImport(Glibc)
import Glibc
#endif

struct Links: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "netdevctl links", abstract: "List links.")

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case short, pretty, off
    }

    @Option(help: "JSON output.") var json: Mode = .off
    @Argument(help: "A glob.") var pattern: String?

    func run() throws {
        let link = LinkReport(
            index: 1, name: pattern ?? "lo", type: "loopback", macAddress: nil, mtu: 65536,
            operationalState: "carrier", addresses: ["127.0.0.1/8"], gateways: [])
        print(String(decoding: try JSONEncoder().encode(["links": [link]]), as: UTF8.self))
        var rollup = ""
        if let file = fopen("/proc/self/smaps_rollup", "r") {
            var line = [CChar](repeating: 0, count: 256)
            while fgets(&line, Int32(line.count), file) != nil {
                rollup += String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            fclose(file)
        }
        print(rollup, terminator: "")
    }
}

Links.main()
