// What linking netdevd's own JSON coder and option parser costs a process: this program encodes a reply and parses a
// command line with them, then prints its private memory (USS) from /proc/self/smaps_rollup. Its twin,
// LinkedLibraries, does the same with FoundationEssentials' JSONEncoder and swift-argument-parser.
// `make benchmark-handwritten` builds both as netdevd is built and compares them.
import CommandOptions
import JSONCoding
import NetdevWire

#if canImport(Glibc)
import Glibc
#endif

let spec = CommandSpec(
    name: "netdevctl links", abstract: "List links.",
    options: [.option("json", value: "mode", help: "JSON output.", choices: ["short", "pretty", "off"], default: "off")],
    arguments: [ArgumentSpec("pattern", help: "A glob.", optional: true)])
let arguments = Array(CommandLine.arguments.dropFirst())
do {
    let parsed = try spec.parse(arguments)
    if parsed.request == .help {
        print(spec.help(), terminator: "")
        exit(0)
    }
    let link = LinkReport(
        index: 1, name: parsed.argument("pattern") ?? "lo", type: "loopback", macAddress: nil, mtu: 65536,
        operationalState: "carrier", addresses: ["127.0.0.1/8"], gateways: [])
    print(try JSONTextEncoder().encodeToString(["links": [link]]))
} catch let error as UsageError {
    print(error)
    exit(2)
}
var rollup = ""
if let file = fopen("/proc/self/smaps_rollup", "r") {
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        rollup += String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    fclose(file)
}
print(rollup, terminator: "")
