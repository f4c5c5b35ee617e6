// LinkedOwn with swift-argument-parser in place of CommandOptions (the JSON coder still JSONCoding).
import ArgumentParser
import HandWrittenProbe
import JSONCoding

struct Links: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "netdevctl links", abstract: "List links.")

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case short, pretty, off
    }

    @Option(help: "JSON output.") var json: Mode = .off
    @Argument(help: "A glob.") var pattern: String?

    func run() throws {
        print(try JSONTextEncoder().encodeToString(["links": [sampleLink(named: pattern)]]))
        printMemory()
    }
}

Links.main()
