// What linking netdevd's own JSON coder and option parser costs a process: a command line parsed with CommandOptions
// and a reply encoded with JSONCoding, then the process's memory printed. Its twins replace one or both with the
// libraries (FoundationEssentials' JSONEncoder, swift-argument-parser); `make benchmark-handwritten` compares them.
import CommandOptions
import HandWrittenProbe
import JSONCoding

#if canImport(Glibc)
import Glibc
#endif

let spec = CommandSpec(
    name: "netdevctl links", abstract: "List links.",
    options: [
        .option("json", value: "mode", help: "JSON output.", choices: ["short", "pretty", "off"], default: "off")
    ],
    arguments: [ArgumentSpec("pattern", help: "A glob.", optional: true)])
do {
    let parsed = try spec.parse(Array(CommandLine.arguments.dropFirst()))
    if parsed.request == .help {
        print(spec.help(), terminator: "")
        exit(0)
    }
    print(try JSONTextEncoder().encodeToString(["links": [sampleLink(named: parsed.argument("pattern"))]]))
} catch let error as UsageError {
    print(error)
    exit(2)
}
printMemory()
