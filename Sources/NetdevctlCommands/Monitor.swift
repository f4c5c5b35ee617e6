import CommandOptions
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// `netdevctl monitor`: the state, then every change of links, devices and the online state, as readable lines
/// or JSON (the whole state after each change, or with `--changes` each change as netdevd sent it), narrowed by
/// the filters like `udevadm monitor`'s.
struct Monitor: NetdevctlCommand {
    static let name = "monitor"
    static let abstract = "Follow changes: links, devices, states, online state."
    static let discussion = """
        Links print their states, addresses and renames; devices print when they are added, changed (udev's \
        action and the properties that changed), renamed or removed. Filters narrow both the lines and the \
        JSON states.
        """
    static let arguments = [
        ArgumentSpec(
            "patterns",
            help: "Globs over link names and device names or sysfs paths ('eth*', 'sd?', '/sys/devices/pci*').",
            repeating: true)
    ]
    static let options: [OptionSpec] = [
        .option(
            "subsystem", help: "Only devices of this udev subsystem (repeat for more); links count as subsystem net.",
            repeating: true),
        .flag("links-only", help: "Only links (and the online state)."),
        .flag("devices-only", help: "Only devices."),
        .flag(
            "changes",
            help: "With --json: the state once, then each change as netdevd sends it ({\"change\": …}), not the whole "
                + "state after each (for hosts with many links)."),
    ]

    var patterns: [String]
    var subsystems: [String]
    var linksOnly: Bool
    var devicesOnly: Bool
    var changes: Bool
    var options: CommonOptions

    init(_ parsed: ParsedCommand, options: CommonOptions) throws(UsageError) {
        patterns = parsed.arguments("patterns")
        subsystems = parsed.values("subsystem")
        linksOnly = parsed.flag("links-only")
        devicesOnly = parsed.flag("devices-only")
        changes = parsed.flag("changes")
        self.options = options
        if linksOnly && devicesOnly {
            throw UsageError(Self.spec, "--links-only and --devices-only exclude each other")
        }
        if changes && options.json == .off {
            throw UsageError(Self.spec, "--changes changes what --json prints: give --json=short or --json=pretty")
        }
    }

    var filter: MonitorFilter {
        MonitorFilter(patterns: patterns, subsystems: subsystems, links: !devicesOnly, devices: !linksOnly)
    }

    func run() throws {
        let client = try options.client()
        let filter = self.filter
        var replies = MonitorReplies()
        var failure: CommandFailure?
        do {
            try client.callWithMore("io.netdevd.Monitor") { reply in
                let step: MonitorReplies.Step
                do throws(CommandFailure) {
                    step = try replies.take(reply)
                } catch {
                    failure = error
                    return false
                }
                // Scripts get the whole (filtered) state after each change, or with --changes each (filtered)
                // change; people get what changed, worked out from the links and devices the change names. Either
                // way each reply is flushed as it comes (a pipe or file would otherwise hold it in a buffer).
                defer { fflush(nil) }
                let json = options.json != .off
                switch step {
                case .state(let state) where json:
                    let state = filter.apply(state)
                    _ = changes ? options.printJSON(encoding: ["state": state]) : options.printJSON(encoding: state)
                case .state(let state):
                    for line in Self.describe(from: nil, to: filter.apply(state), filter: filter) {
                        print("[\(Self.timestamp())] \(line)")
                    }
                case .change(let change, let before, _) where json:
                    if changes {
                        _ = options.printJSON(encoding: ["change": filter.apply(change, before: before)])
                    } else if let state = replies.state {
                        _ = options.printJSON(encoding: filter.apply(state))
                    }
                case .change(_, let before, let after):
                    for line in Self.describe(from: filter.apply(before), to: filter.apply(after), filter: filter) {
                        print("[\(Self.timestamp())] \(line)")
                    }
                }
                return true
            }
        } catch .error(name: "io.netdevd.ClientTooSlow", _) {
            throw CommandFailure(
                status: 1,
                message: "netdevctl: monitor ended: netdevd cut it off for reading its changes too slowly "
                    + "(io.netdevd.ClientTooSlow); the changes after the last one shown were not received: run it "
                    + "again for the current state")
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: monitor ended: \(error)")
        }
        if let failure { throw failure }
    }

    /// The local time now as `HH:MM:SS.mmm`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var local = tm()
        localtime_r(&seconds, &local)
        var text = [CChar](repeating: 0, count: 16)
        let count = strftime(&text, text.count, "%H:%M:%S", &local)
        let milliseconds = now.tv_nsec / 1_000_000
        let fraction =
            milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return String(decoding: text[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) + "." + fraction
    }

    /// What changed between two (filtered) states, one line each.
    static func describe(
        from old: StateReport?, to new: StateReport, filter: MonitorFilter = MonitorFilter()
    ) -> [String] {
        guard let old else {
            var header: [String] = []
            if filter.links {
                header.append("online state \(Paint.state(new.onlineState)); \(quantity(new.links.count, "link"))")
            }
            if filter.devices, let devices = new.devices { header.append(quantity(devices.count, "device")) }
            return [header.joined(separator: "; ")]
                + new.links.map { "\($0.name): \(Paint.state($0.operationalState))" }
        }
        var lines = describeLinks(from: old.links, to: new.links)
        lines += describeDevices(from: old.devices ?? [], to: new.devices ?? [])
        if filter.links && old.onlineState != new.onlineState {
            lines.append("online state \(old.onlineState) → \(Paint.state(new.onlineState))")
        }
        if old.phase != new.phase {
            lines.append("netdevd \(new.phase)")
        }
        return lines
    }

    static func describeLinks(from old: [LinkReport], to new: [LinkReport]) -> [String] {
        var lines: [String] = []
        let before = Dictionary(old.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        let after = Dictionary(new.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        for link in new {
            guard let was = before[link.index] else {
                lines.append("\(link.name): added, \(Paint.state(link.operationalState))")
                continue
            }
            if was.name != link.name {
                lines.append("\(was.name): renamed to \(link.name)")
            }
            if was.operationalState != link.operationalState {
                lines.append("\(link.name): \(was.operationalState) → \(Paint.state(link.operationalState))")
            }
            for address in link.addresses where !was.addresses.contains(address) {
                lines.append("\(link.name): address \(address) added")
            }
            for address in was.addresses where !link.addresses.contains(address) {
                lines.append("\(link.name): address \(address) removed")
            }
        }
        for link in old where after[link.index] == nil {
            lines.append("\(link.name): removed")
        }
        return lines
    }

    /// Properties that change with every uevent and say nothing about the device.
    static let eventProperties: Set<String> = ["ACTION", "SEQNUM", "DEVPATH_OLD", "USEC_INITIALIZED"]

    static func describeDevices(from old: [DeviceReport], to new: [DeviceReport]) -> [String] {
        var lines: [String] = []
        let before = Dictionary(old.map { ($0.syspath, $0) }, uniquingKeysWith: { _, last in last })
        let after = Dictionary(new.map { ($0.syspath, $0) }, uniquingKeysWith: { _, last in last })
        var renamedFrom: Set<String> = []
        for device in new {
            let name = "\(device.subsystem) device \(device.sysname)"
            guard let was = before[device.syspath] else {
                // udev's move: the old path is gone in the same change, and DEVPATH_OLD names it.
                if let oldPath = device.properties["DEVPATH_OLD"],
                    let moved = old.first(where: { after[$0.syspath] == nil && $0.syspath.hasSuffix(oldPath) })
                {
                    renamedFrom.insert(moved.syspath)
                    lines.append(
                        moved.sysname == device.sysname
                            ? "\(name) moved to \(device.syspath)"
                            : "\(device.subsystem) device \(moved.sysname) renamed to \(device.sysname)")
                } else {
                    lines.append("\(name) added (\(device.syspath))")
                }
                continue
            }
            guard was != device else { continue }
            let keys = Set(was.properties.keys).union(device.properties.keys).subtracting(eventProperties).sorted()
            var changes: [String] = []
            for key in keys where was.properties[key] != device.properties[key] {
                changes.append(device.properties[key].map { "\(key)=\($0)" } ?? "-\(key)")
            }
            if was.driver != device.driver { changes.insert("driver \(device.driver ?? "none")", at: 0) }
            let shown = changes.prefix(4).joined(separator: ", ") + (changes.count > 4 ? ", …" : "")
            let action = device.properties["ACTION"] ?? "changed"
            lines.append("\(name): \(action)" + (shown.isEmpty ? "" : " (\(shown))"))
        }
        for device in old where after[device.syspath] == nil && !renamedFrom.contains(device.syspath) {
            lines.append("\(device.subsystem) device \(device.sysname) removed (\(device.syspath))")
        }
        return lines
    }
}
