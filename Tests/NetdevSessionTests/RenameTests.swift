import MobiusCore
import NetdevSession
import Testing

/// Renames and moves (udev's `move`, rtnetlink's new name): the model drops the old path, the journal says
/// "renamed" once, and hooks hear `device-moved` with the path they last knew, whatever waits in the queue.
@Suite("renames and moves")
struct RenameTests {
    static let old = Device(syspath: "/sys/devices/virtual/net/mv0", sysname: "mv0", subsystem: "net")
    static let new = Device(syspath: "/sys/devices/virtual/net/mv2", sysname: "mv2", subsystem: "net")
    static let newer = Device(syspath: "/sys/devices/virtual/net/mv3", sysname: "mv3", subsystem: "net")

    /// A running session that knows `old` and whose hooks for it have run; with one slot, busy with eth0's run
    /// when `busy` (so that what follows waits).
    static func knowingOld(busy: Bool) throws -> (Model, [HookRun]) {
        var model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))], configuration: Configuration(hookParallelism: 1))
        let added = Session.update(model, .deviceChanged(old, action: "add"))
        model = try #require(added.model)
        _ = HookCoalescingTests.drain(&model, running: Fixture.runs(added.effects))
        guard busy else { return (model, []) }
        let first = Session.update(model, .linkChanged(Fixture.state(2, "eth0")))
        return (try #require(first.model), Fixture.runs(first.effects))
    }

    @Test("a moved device is under its new path only; one journal entry says renamed; hooks get device-moved")
    func moved() throws {
        let (model, _) = try Self.knowingOld(busy: false)
        let next = Session.update(model, .deviceMoved(Self.new, fromSyspath: Self.old.syspath))
        let after = try #require(next.model)
        #expect(after.devices[Self.old.syspath] == nil)
        #expect(after.devices[Self.new.syspath] == Self.new)
        let entries = Fixture.logs(next.effects)
        #expect(entries.map(\.kind) == [.deviceMoved])
        #expect(entries.first?.message == "net device mv0 renamed to mv2")
        #expect(entries.first?.field("NETDEVD_PREV_DEVPATH") == Self.old.syspath)
        #expect(entries.first?.field("NETDEVD_DEVPATH") == Self.new.syspath)
        let runs = Fixture.runs(next.effects)
        #expect(runs.map(\.event) == [.deviceMoved])
        #expect(runs.first?.subject == .device(syspath: Self.new.syspath))
        #expect(runs.first?.environment.contains(LogField("NETDEVD_PREV_DEVPATH", Self.old.syspath)) == true)
    }

    @Test("a device moved before its added hooks ran: one device-added run, under the new path, nothing dropped")
    func movedBeforeItsAddedRan() throws {
        var (model, busy) = try Self.knowingOld(busy: true)
        let dropped = model.counters.staleHookRunsDropped
        let disk = Device(syspath: "/sys/block/sdb", sysname: "sdb", subsystem: "block")
        let moved = Device(syspath: "/sys/block/sdc", sysname: "sdc", subsystem: "block")
        model = try #require(Session.update(model, .deviceChanged(disk, action: "add")).model)
        model = try #require(Session.update(model, .deviceMoved(moved, fromSyspath: disk.syspath)).model)
        let runs = HookCoalescingTests.drain(&model, running: busy).filter { $0.device != nil }
        #expect(runs.map(\.event) == [.deviceAdded])
        #expect(runs.map(\.subject) == [.device(syspath: moved.syspath)])
        #expect(runs.first?.environment.contains { $0.name == "NETDEVD_PREV_DEVPATH" } == false)
        #expect(model.counters.staleHookRunsDropped == dropped)
        #expect(model.hooks.isIdle)
    }

    @Test("moves and changes while the hooks are busy: one device-moved run, newest state, from the path known")
    func movesAndChangesMerge() throws {
        var (model, busy) = try Self.knowingOld(busy: true)
        var changed = Self.new
        changed.properties["V"] = "2"
        var newest = Self.newer
        newest.properties["V"] = "3"
        model = try #require(Session.update(model, .deviceChanged(Self.old, action: "change")).model)
        model = try #require(Session.update(model, .deviceMoved(Self.new, fromSyspath: Self.old.syspath)).model)
        model = try #require(Session.update(model, .deviceChanged(changed, action: "change")).model)
        model = try #require(Session.update(model, .deviceMoved(newest, fromSyspath: Self.new.syspath)).model)
        let runs = HookCoalescingTests.drain(&model, running: busy).filter { $0.device != nil }
        #expect(runs.map(\.event) == [.deviceMoved])
        #expect(runs.first?.device == newest)
        #expect(runs.first?.environment.contains(LogField("NETDEVD_PREV_DEVPATH", Self.old.syspath)) == true)
        #expect(model.hooks.isIdle)
    }

    @Test("a device moved and then removed before the move ran: one device-removed run naming the path known")
    func movedThenRemoved() throws {
        var (model, busy) = try Self.knowingOld(busy: true)
        model = try #require(Session.update(model, .deviceMoved(Self.new, fromSyspath: Self.old.syspath)).model)
        model = try #require(Session.update(model, .deviceRemoved(syspath: Self.new.syspath)).model)
        let runs = HookCoalescingTests.drain(&model, running: busy).filter { $0.device != nil }
        #expect(runs.map(\.event) == [.deviceRemoved])
        #expect(runs.first?.environment.contains(LogField("NETDEVD_DEVPATH", Self.new.syspath)) == true)
        #expect(runs.first?.environment.contains(LogField("NETDEVD_PREV_DEVPATH", Self.old.syspath)) == true)
        #expect(model.devices.isEmpty)
    }

    @Test("a move while the old path's hooks run: the old path's removal after that run, the new path's added")
    func movedWhileItsHooksRun() throws {
        var model = Fixture.running(configuration: Configuration(hookParallelism: 2))
        let added = Session.update(model, .deviceChanged(Self.old, action: "add"))
        let running = Fixture.runs(added.effects)
        model = try #require(added.model)
        let moved = Session.update(model, .deviceMoved(Self.new, fromSyspath: Self.old.syspath))
        model = try #require(moved.model)
        // The new path's added runs at once (a slot is free); the old path's removal waits for its running run.
        #expect(Fixture.runs(moved.effects).map(\.event) == [.deviceAdded])
        #expect(Fixture.runs(moved.effects).first?.subject == .device(syspath: Self.new.syspath))
        let rest = HookCoalescingTests.drain(&model, running: running + Fixture.runs(moved.effects))
        #expect(rest.map(\.event) == [.deviceRemoved])
        #expect(rest.first?.subject == .device(syspath: Self.old.syspath))
        #expect(model.hooks.isIdle)
    }

    @Test("a move onto a path whose removal waits, removed and added again: every removal runs, in order")
    func moveBehindAWaitingRemoval() throws {
        var (model, _) = try Self.knowingOld(busy: false)
        let other = Device(syspath: Self.new.syspath, sysname: "mv2", subsystem: "net", properties: ["V": "0"])
        let otherAdded = Session.update(model, .deviceChanged(other, action: "add"))
        model = try #require(otherAdded.model)
        _ = HookCoalescingTests.drain(&model, running: Fixture.runs(otherAdded.effects))
        // The one slot busy: what follows waits.
        let first = Session.update(model, .linkChanged(Fixture.state(2, "eth0")))
        model = try #require(first.model)
        let busy = Fixture.runs(first.effects)
        model = try #require(Session.update(model, .deviceRemoved(syspath: other.syspath)).model)
        model = try #require(Session.update(model, .deviceMoved(Self.new, fromSyspath: Self.old.syspath)).model)
        model = try #require(Session.update(model, .deviceRemoved(syspath: Self.new.syspath)).model)
        var again = Self.new
        again.properties["V"] = "2"
        model = try #require(Session.update(model, .deviceChanged(again, action: "add")).model)
        let runs = HookCoalescingTests.drain(&model, running: busy).filter { $0.device != nil }
        let byPath = { (path: String) in runs.filter { $0.subject == .device(syspath: path) }.map(\.event) }
        // mv0's hooks hear it go (as mv0, the path they knew); mv2's: the earlier device's removal, then the new one.
        #expect(byPath(Self.old.syspath) == [.deviceRemoved])
        #expect(byPath(Self.new.syspath) == [.deviceRemoved, .deviceAdded])
        #expect(model.hooks.isIdle)
    }

    @Test("moved away and back while the hooks are busy: a change of the path the hooks know, not a move")
    func movedAndBack() throws {
        var (model, busy) = try Self.knowingOld(busy: true)
        model = try #require(Session.update(model, .deviceMoved(Self.new, fromSyspath: Self.old.syspath)).model)
        model = try #require(Session.update(model, .deviceMoved(Self.old, fromSyspath: Self.new.syspath)).model)
        let runs = HookCoalescingTests.drain(&model, running: busy).filter { $0.device != nil }
        #expect(runs.map(\.event) == [.deviceChanged])
        #expect(runs.first?.subject == .device(syspath: Self.old.syspath))
        #expect(runs.first?.environment.contains { $0.name == "NETDEVD_PREV_DEVPATH" } == false)
    }

    @Test("a move from a path never seen adds the device under its new path")
    func moveOfAnUnknownDevice() throws {
        let model = Fixture.running()
        let next = Session.update(model, .deviceMoved(Self.new, fromSyspath: Self.old.syspath))
        #expect(next.model?.devices[Self.new.syspath] == Self.new)
        #expect(Fixture.logs(next.effects).map(\.kind) == [.deviceAdded])
        #expect(Fixture.runs(next.effects).map(\.event) == [.deviceAdded])
    }

    @Test("a renamed link: one journal entry with the old name; its index and state stay")
    func linkRenamed() throws {
        let model = Fixture.running([Fixture.routable(4, "mv0")])
        let next = Session.update(model, .linkChanged(Fixture.state(4, "mv2")))
        #expect(next.model?.links[4]?.name == "mv2")
        let entries = Fixture.logs(next.effects)
        #expect(entries.map(\.kind) == [.linkRenamed])
        #expect(entries.first?.message == "mv0: renamed to mv2")
        #expect(entries.first?.field("NETDEVD_PREV_IFNAME") == "mv0")
        #expect(entries.first?.field("NETDEVD_IFINDEX") == "4")
    }
}
