import CommandOptions
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
        let links = try options.call("io.netdevd.ListLinks", parameters, as: LinksReply.self).links
        if options.printJSON(encoding: links) { return }
        print(linkTable(links, legend: !options.noLegend, addresses: false))
    }
}

/// The parameters of `ListLinks`'s reply.
struct LinksReply: Decodable {
    var links: [LinkReport]
}
