import CommandOptions
import NetdevWire
import Varlink

/// `netdevctl status`: phase, online state, the links and device counts.
struct Status: NetdevctlCommand {
    static let name = "status"
    static let abstract = "Show the online state, the links and device counts."

    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        self.options = options
    }

    func run() throws {
        let reply = try options.call("io.netdevd.GetState")
        if options.printJSON(reply["state"]) { return }
        let state = try decode(reply["state"], as: StateReport.self, what: "state")
        print("Online state: \(Paint.state(state.onlineState)) (netdevd \(state.phase))")
        print("")
        print(linkTable(state.links, legend: !options.noLegend, addresses: true))
        let devices = state.deviceCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        if !devices.isEmpty {
            print("")
            print("Devices: " + devices.joined(separator: ", "))
        }
    }
}

/// The `IDX LINK TYPE OPERATIONAL` table, addresses indented under each link when asked.
func linkTable(_ links: [LinkReport], legend: Bool, addresses: Bool) -> String {
    let rows = links.map { [String($0.index), $0.name, $0.type, $0.operationalState] }
    var lines = table(["IDX", "LINK", "TYPE", "OPERATIONAL"], rows, legend: legend).split(separator: "\n").map(
        String.init)
    let offset = legend ? 1 : 0
    var output: [String] = []
    for (index, line) in lines.enumerated() {
        if index < offset {
            output.append(line)
            continue
        }
        let link = links[index - offset]
        output.append(String(line.dropLast(link.operationalState.count)) + Paint.state(link.operationalState))
        if addresses {
            output += link.addresses.map { "      \($0)" }
        }
    }
    lines = output
    if legend {
        lines.append("")
        lines.append("\(links.count) link\(links.count == 1 ? "" : "s") listed.")
    }
    return lines.joined(separator: "\n")
}
