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

    /// `change` as a monitor of this filter sees it: the links and devices it admits; those it admitted `before`
    /// (the entries the change replaced) and admits no more, renamed out of its globs say, are among the removed,
    /// so that applying the filtered changes to the filtered state gives the filtered state.
    func apply(_ change: ChangeReport, before: StateReport) -> ChangeReport {
        var change = change
        let admittedBefore = Set(before.links.filter(admits).map(\.index))
        let leaving = change.links.filter { !admits($0) && admittedBefore.contains($0.index) }.map(\.index)
        change.removedLinks = (change.removedLinks.filter { admittedBefore.contains($0) } + leaving).sorted()
        change.links = change.links.filter(admits)
        let devicesBefore = Set((before.devices ?? []).filter(admits).map(\.syspath))
        let gone = change.devices.filter { !admits($0) && devicesBefore.contains($0.syspath) }.map(\.syspath)
        change.removedDevices =
            devices ? (change.removedDevices.filter { devicesBefore.contains($0) } + gone).sorted() : []
        change.devices = devices ? change.devices.filter(admits) : []
        return change
    }
}
