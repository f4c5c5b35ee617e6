// LinkedOwn with FoundationEssentials' JSONEncoder in place of JSONCoding (the option parser still CommandOptions).
import CommandOptions
import FoundationEssentials
import HandWrittenProbe

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
    let encoded = try JSONEncoder().encode(["links": [sampleLink(named: parsed.argument("pattern"))]])
    print(String(decoding: encoded, as: UTF8.self))
} catch let error as UsageError {
    print(error)
    exit(2)
}
printMemory()
