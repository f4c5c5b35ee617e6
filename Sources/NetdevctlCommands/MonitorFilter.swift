import CommandOptions
import NetdevWire
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// What `netdevctl monitor` shows: links and devices whose names (or device paths) match one of the globs (all
/// without one), devices of the given subsystems (all without one; links are subsystem `net`), or only links or
/// only devices.
struct MonitorFilter: Sendable {
    var patterns: [String] = []
    var subsystems: [String] = []
    var links = true
    var devices = true

    func admits(_ link: LinkReport) -> Bool {
        links && (subsystems.isEmpty || subsystems.contains("net"))
            && (patterns.isEmpty || patterns.contains { Glob.matches($0, link.name) })
    }

    func admits(_ device: DeviceReport) -> Bool {
        devices && (subsystems.isEmpty || subsystems.contains(device.subsystem))
            && (patterns.isEmpty
                || patterns.contains { Glob.matches($0, device.sysname) || Glob.matches($0, device.syspath) })
    }

    /// `state` with only the links and devices this filter admits (no devices at all with `--links-only`).
    func apply(_ state: StateReport) -> StateReport {
        var state = state
        state.links = state.links.filter(admits)
        state.devices = devices ? state.devices?.filter(admits) : nil
        return state
    }
}
