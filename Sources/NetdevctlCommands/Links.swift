import CommandOptions
import NetdevSession
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

/// `netdevctl devices [--subsystem S]`.
struct Devices: NetdevctlCommand {
    static let name = "devices"
    static let abstract = "List tracked devices."
    static let options = [
        OptionSpec.option("subsystem", help: "Only devices of this udev subsystem (net, block, usb, tty, ...).")
    ]

    var subsystem: String?
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        subsystem = parsed.value("subsystem")
        self.options = options
    }

    func run() throws {
        let reply = try options.call("io.netdevd.ListDevices", subsystem.map { ["subsystem": .string($0)] } ?? [:])
        if options.printJSON(reply["devices"]) { return }
        let devices = try decode(reply["devices"], as: [DeviceReport].self, what: "list of devices")
        let rows = devices.map { [$0.subsystem, $0.sysname, $0.devnode ?? "-", $0.driver ?? "-"] }
        print(table(["SUBSYSTEM", "NAME", "DEVNODE", "DRIVER"], rows, legend: !options.noLegend))
        if !options.noLegend {
            print("\n\(devices.count) device\(devices.count == 1 ? "" : "s") listed.")
        }
    }
}

/// `netdevctl device PATH`.
struct DeviceCommand: NetdevctlCommand {
    static let name = "device"
    static let abstract = "Show one device in detail, by sysfs path or kernel name."
    static let arguments = [
        ArgumentSpec("path", help: "The device's sysfs path (/sys/devices/...) or kernel name (sda, ttyUSB0).")
    ]

    var path: String
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        path = parsed.argument("path") ?? ""
        self.options = options
    }

    func run() throws {
        let reply = try options.call("io.netdevd.ListDevices")
        let devices = try decode(reply["devices"], as: [DeviceReport].self, what: "list of devices")
        guard let device = devices.first(where: { $0.syspath == path || $0.sysname == path }) else {
            throw CommandFailure(
                status: 1, message: "netdevctl: no tracked device '\(path)'; `netdevctl devices` lists them")
        }
        if options.printJSON(encoding: device) { return }
        print(Self.describe(device), terminator: "")
    }

    /// The device as `udevadm info` would show it, for people: the main facts under labels, then every udev
    /// property as `KEY=VALUE`, sorted.
    static func describe(_ device: DeviceReport) -> String {
        let properties = device.properties
        let fields: [(String, String?)] = [
            ("Path", device.syspath), ("Subsystem", device.subsystem), ("Type", device.devtype),
            ("Node", device.devnode), ("Driver", device.driver),
            ("Vendor", properties["ID_VENDOR_FROM_DATABASE"] ?? properties["ID_VENDOR"]),
            ("Model", properties["ID_MODEL_FROM_DATABASE"] ?? properties["ID_MODEL"]),
            ("Serial", properties["ID_SERIAL_SHORT"] ?? properties["ID_SERIAL"]),
        ]
        var text = "\(device.sysname)\n"
        let width = "Subsystem".count
        for case (let label, let value?) in fields {
            text += String(repeating: " ", count: width - label.count) + "\(label): \(value)\n"
        }
        let links = (properties["DEVLINKS"] ?? "").split(separator: " ").sorted()
        for (index, link) in links.enumerated() {
            text +=
                (index == 0
                    ? String(repeating: " ", count: width - 8) + "Devlinks:" : String(repeating: " ", count: width + 1))
                + " \(link)\n"
        }
        if !properties.isEmpty {
            text += "Properties:\n"
            for key in properties.keys.sorted() { text += "  \(key)=\(properties[key] ?? "")\n" }
        }
        return text
    }
}

/// `netdevctl reload`: returns once netdevd has re-read its configuration; says which lines it ignored, and exits 1
/// with the reasons when it kept the previous configuration.
struct Reload: NetdevctlCommand {
    static let name = "reload"
    static let abstract = "Make netdevd re-read its configuration (root only); say what it ignored or refused."

    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        self.options = options
    }

    func run() throws {
        let client = try options.client()
        let reply: [String: JSONValue]
        do {
            reply = try client.call("io.netdevd.Reload")
        } catch .error(name: "io.netdevd.ConfigurationRejected", let parameters) {
            let errors = parameters["errors"]?.arrayValue?.compactMap(\.stringValue) ?? []
            throw CommandFailure(
                status: 1,
                message: "netdevctl: netdevd kept its previous configuration; the new one cannot be read:\n"
                    + errors.map { "  \($0)" }.joined(separator: "\n"))
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: io.netdevd.Reload failed: \(error)")
        }
        let warnings = reply["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !warnings.isEmpty {
            writeToStandardError(
                "netdevctl: reloaded; netdevd ignored \(quantity(warnings.count, "line")):\n"
                    + warnings.map { "  \($0)\n" }.joined())
        }
    }
}

/// `netdevctl metrics`: netdevd's metrics in Prometheus' text exposition format, as `[Metrics] TextfileDirectory=`
/// writes them, for a look by hand or a collector of one's own.
struct MetricsCommand: NetdevctlCommand {
    static let name = "metrics"
    static let abstract = "Print netdevd's metrics in Prometheus' text format."
    static let discussion = """
        The same text netdevd writes to netdevd.prom when [Metrics] TextfileDirectory= is set (for
        node_exporter's textfile collector). With --json: {"text": ...}.
        """

    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) {
        self.options = options
    }

    func run() throws {
        struct Reply: Codable {
            var text: String
        }
        let reply = try options.call("io.netdevd.GetMetrics", as: Reply.self)
        if options.printJSON(encoding: reply) { return }
        print(reply.text, terminator: "")
    }
}
