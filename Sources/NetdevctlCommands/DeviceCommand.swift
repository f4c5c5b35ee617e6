import CommandOptions
import NetdevWire
import Varlink

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
