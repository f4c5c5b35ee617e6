// LinkedOwn with both libraries: swift-argument-parser for the command line, FoundationEssentials' JSONEncoder for
// the reply.
import ArgumentParser
import FoundationEssentials
import HandWrittenProbe

struct Links: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "netdevctl links", abstract: "List links.")

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case short, pretty, off
    }

    @Option(help: "JSON output.") var json: Mode = .off
    @Argument(help: "A glob.") var pattern: String?

    func run() throws {
        print(String(decoding: try JSONEncoder().encode(["links": [sampleLink(named: pattern)]]), as: UTF8.self))
        printMemory()
    }
}

Links.main()
