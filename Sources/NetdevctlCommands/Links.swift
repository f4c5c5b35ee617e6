import CommandOptions
import JSONCoding
import NetdevWire
import Varlink

/// `netdevctl links [PATTERN]`.
struct Links: NetdevctlCommand {
    static let name = "links"
    static let abstract = "List links, optionally those matching a glob."
    static let arguments = [ArgumentSpec("pattern", help: "A glob over link names, such as 'eth*'.", optional: true)]

    var pattern: String?
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        pattern = parsed.argument("pattern")
        self.options = options
    }

    func run() throws {
        let parameters: [String: JSONValue] = pattern.map { ["pattern": .string($0)] } ?? [:]
        // JSON is printed as the reply gave it: decoding 20,000 reports only to encode them again was most of
        // the command's time.
        if options.json != .off {
            let links = try options.call("io.netdevd.ListLinks", parameters, as: PassedOnReply.self).links
            _ = options.printJSON(encoding: links)
            return
        }
        let links = try options.call("io.netdevd.ListLinks", parameters, as: LinkRowsReply.self).links
        print(linkTable(links, legend: !options.noLegend))
    }
}

/// The parameters of `ListLinks`'s reply, as much as the table shows.
struct LinkRowsReply: Decodable {
    var links: [LinkRow]
}

/// The parameters of `ListLinks`'s reply, to print as they came.
struct PassedOnReply: Decodable {
    var links: JSONFragment
}
