import CommandOptions
import NetdevWire
import Varlink

/// `netdevctl link NAME`.
struct LinkCommand: NetdevctlCommand {
    static let name = "link"
    static let abstract = "Show one link in detail."
    static let arguments = [ArgumentSpec("name", help: "The link's name.")]

    var name: String
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        name = parsed.argument("name") ?? ""
        self.options = options
    }

    func run() throws {
        let link = try Self.find(name, options: options)
        if options.printJSON(encoding: link) { return }
        print(Self.details(link))
    }

    /// The link called `name`, from netdevd; none is a failure that says how to list them.
    static func find(_ name: String, options: CommonOptions) throws -> LinkReport {
        let reply = try options.call("io.netdevd.ListLinks", ["pattern": .string(name)])
        let links = try decode(reply["links"], as: [LinkReport].self, what: "list of links")
        guard let link = links.first(where: { $0.name == name }) else {
            throw CommandFailure(status: 1, message: "netdevctl: no link named '\(name)'; `netdevctl links` lists them")
        }
        return link
    }

    /// The link's index, name, type, state, hardware address, MTU, addresses and gateways, one per line.
    static func details(_ link: LinkReport) -> String {
        var lines = ["\(link.index): \(link.name)", "       Type: \(link.type)"]
        lines.append("Operational: \(Paint.state(link.operationalState))")
        if let mac = link.macAddress { lines.append("   Hardware: \(mac)") }
        if let mtu = link.mtu { lines.append("        MTU: \(mtu)") }
        for (index, address) in link.addresses.enumerated() {
            lines.append("\(index == 0 ? "    Address:" : "            ") \(address)")
        }
        for (index, gateway) in link.gateways.enumerated() {
            lines.append("\(index == 0 ? "    Gateway:" : "            ") \(gateway.isEmpty ? "(on link)" : gateway)")
        }
        return lines.joined(separator: "\n")
    }
}
