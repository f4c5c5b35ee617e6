import CommandOptions
import NetdevWire
import Varlink

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
