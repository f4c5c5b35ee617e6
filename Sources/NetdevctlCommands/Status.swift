import CommandOptions
public import NetdevWire
import Varlink

/// `netdevctl status [LINK]`: phase, online state, the links and device counts; or one link in detail with its
/// last journal entries, as `networkctl status LINK` shows them.
struct Status: NetdevctlCommand {
    static let name = "status"
    static let abstract = "Show the online state, the links and device counts, or one link and its journal entries."
    static let arguments = [
        ArgumentSpec(
            "link", help: "Show this link in detail, then netdevd's last 10 journal entries about it.", optional: true)
    ]

    var link: String?
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        link = parsed.argument("link")
        self.options = options
    }

    func run() throws {
        if let link {
            try showLink(link)
            return
        }
        let reply = try options.call("io.netdevd.GetState")
        if options.printJSON(reply["state"]) { return }
        let state = try decode(reply["state"], as: StateReport.self, what: "state")
        print("Online state: \(Paint.state(state.onlineState)) (netdevd \(state.phase))")
        print("")
        print(
            linkTable(state.links.map(LinkRow.init), legend: !options.noLegend, addresses: state.links.map(\.addresses))
        )
        let devices = state.deviceCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        if !devices.isEmpty {
            print("")
            print("Devices: " + devices.joined(separator: ", "))
        }
        do {
            print(Self.hookLine(try options.call("io.netdevd.CountHooks", as: HookCountsReport.self)))
        } catch let failure as CommandFailure {
            // A netdevd from before CountHooks answers MethodNotFound: the line is left out. Anything else is said.
            if !failure.message.contains("MethodNotFound") {
                print("Hooks: unknown (\(failure.message.dropFirst("netdevctl: ".count)))")
            }
        } catch {
            print("Hooks: unknown (\(error))")
        }
    }

    /// `Hooks: link-state 2, online-state 1 (1 refused)`: the events that run any, in netdevd's order of events.
    static func hookLine(_ counts: HookCountsReport) -> String {
        let order = HookEvent.allCases.map(\.rawValue) + ["batch"]
        let known = order.filter { counts.hooks[$0] != nil } + counts.hooks.keys.filter { !order.contains($0) }.sorted()
        let running = known.compactMap { event in counts.hooks[event].flatMap { $0 > 0 ? "\(event) \($0)" : nil } }
        let refused = counts.refused > 0 ? " (\(counts.refused) refused: see netdevd's journal)" : ""
        return "Hooks: " + (running.isEmpty ? "none" : running.joined(separator: ", ")) + refused
    }
}

extension Status {
    /// The command a first argument that names no link was probably meant to be, if one is that close.
    static func commandMeant(by name: String) -> String? {
        var names: [String] = []
        for command in Netdevctl.commands { names.append(command.name) }
        return closestName(to: name, among: names, maximumDistance: 2)
    }

    /// The link's details, then its last 10 entries in the journal (or the line saying they cannot be read). A
    /// name that is no link but close to a command's (`netdevctl lnks`) was a mistyped command: it is called one.
    func showLink(_ name: String) throws {
        let found = Result { try LinkCommand.find(name, options: options) }
        if case .failure(let failure as CommandFailure) = found, failure.status == 1,
            let command = Self.commandMeant(by: name)
        {
            throw CommandFailure(
                status: 2,
                message: "netdevctl: unknown command '\(name)' (and no link has that name); did you mean "
                    + "'netdevctl \(command)'? `netdevctl help` lists the commands")
        }
        let link = try found.get()
        if options.printJSON(encoding: link) { return }
        print(LinkCommand.details(link))
        print("")
        let view = JournalView(subject: name, count: 10)
        guard view.permitted else {
            writeToStandardError(JournalView.notPermitted + "\n")
            return
        }
        // The link is shown whatever the journal says: a journal that cannot be read is one line, not a failure.
        do {
            let records = try view.read(try view.open())
            for record in records { print(view.line(record)) }
        } catch {
            print(String(error.message.dropFirst("netdevctl: ".count)))
        }
    }
}

/// The `IDX LINK TYPE OPERATIONAL` table `netdevctl links` and `netdevctl status` print, with a header and a count
/// when `legend` is set, and each link's `addresses` (one list per link, in order) indented under it when given.
public func linkTable(_ links: [LinkRow], legend: Bool, addresses: [[String]]? = nil) -> String {
    // The state is the last column, which is not padded: painted before the table is laid out.
    let rows = links.map { [String($0.index), $0.name, $0.type, Paint.state($0.operationalState)] }
    let table = tableLines(["IDX", "LINK", "TYPE", "OPERATIONAL"], rows, legend: legend)
    let offset = legend ? 1 : 0
    var lines = Array(table.prefix(offset))
    lines.reserveCapacity(table.count + 2)
    for (number, line) in table.dropFirst(offset).enumerated() {
        lines.append(line)
        if let addresses {
            lines += addresses[number].map { "      \($0)" }
        }
    }
    if legend {
        lines.append("")
        lines.append("\(links.count) link\(links.count == 1 ? "" : "s") listed.")
    }
    return lines.joined(separator: "\n")
}
