// The command line of the LinkedArgumentParser/LinkedLibraries programs, parsed with swift-argument-parser.
import ArgumentParser
public import HandWrittenProbe

/// `netdevctl links [PATTERN] [--json MODE]`, as swift-argument-parser declares it.
struct Links: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "netdevctl links", abstract: "List links.")

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case short, pretty, off
    }

    @Option(help: "JSON output.") var json: Mode = .off
    @Argument(help: "A glob.") var pattern: String?
}

/// Parses the command line with swift-argument-parser (which prints help and usage errors and exits), prints the
/// sample link encoded by `encode`, then the process's memory.
public func runLinks(encode: (LinkReportSample) throws -> String) throws {
    let command = Links.parseOrExit()
    print(try encode(LinkReportSample(links: [sampleLink(named: command.pattern)])))
    printMemory()
}
