// The command line of the LinkedOwn/LinkedFoundationJSON programs, parsed with CommandOptions.
import CommandOptions
public import HandWrittenProbe

#if canImport(Glibc)
import Glibc
#endif

/// Parses `netdevctl links [PATTERN] [--json MODE]` with CommandOptions (help and usage errors as netdevctl gives
/// them), prints the sample link encoded by `encode`, then the process's memory.
public func runLinks(encode: (LinkReportSample) throws -> String) throws {
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
        print(try encode(LinkReportSample(links: [sampleLink(named: parsed.argument("pattern"))])))
    } catch let error as UsageError {
        print(error)
        exit(2)
    }
    printMemory()
}
