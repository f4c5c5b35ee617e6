import MobiusCore
import MobiusTest
import NetdevSession
import Testing

@Suite("Hook scheduling")
struct HookTests {
    @Test("a link state change runs hooks with the documented environment")
    func environment() {
        let model = Fixture.running([Link(state: Fixture.state(2, "eth0"))])
        let next = Session.update(model, .addressAdded(index: 2, Fixture.v4))
        let run = Fixture.runs(next.effects).first
        #expect(run?.event == .linkState)
        #expect(run?.subjectName == "eth0")
        #expect(
            run?.environment == [
                LogField("NETDEVD_EVENT", "link-state"), LogField("NETDEVD_IFNAME", "eth0"),
                LogField("NETDEVD_IFINDEX", "2"), LogField("NETDEVD_OPER_STATE", "routable"),
                LogField("NETDEVD_PREV_OPER_STATE", "carrier"), LogField("NETDEVD_ADDRESSES", "192.0.2.10/24"),
                LogField("NETDEVD_ONLINE_STATE", "online"),
            ]
        )
        #expect(Fixture.runs(next.effects).map(\.event) == [.linkState, .onlineState])
        let kinds = Fixture.logs(next.effects).map(\.kind)
        #expect(kinds == [.addressAdded, .linkStateChanged, .onlineStateChanged])
        let change = Fixture.logs(next.effects)[1]
        #expect(change.field("NETDEVD_IFNAME") == "eth0" && change.field("NETDEVD_OPER_STATE") == "routable")
        #expect(change.field("NETDEVD_PREV_OPER_STATE") == "carrier")
        #expect(change.kind.id == "4d0b1a6f8e2c4b7e9a31c5d2e7f80a13")
    }

    @Test("a drop that changes nothing else still moves the change sequence, so clients learn the new count")
    func dropAloneMovesTheSequence() throws {
        var model = Fixture.running([Link(state: Fixture.state(2, "eth0", carrier: false))])
        model = try #require(Session.update(model, .linkChanged(Fixture.state(2, "eth0"))).model)  // runs
        model = try #require(Session.update(model, .linkChanged(Fixture.state(2, "eth0", carrier: false))).model)
        #expect(model.hooks.waiting.count == 1)
        model.configuration.debounceMilliseconds = 50
        model = try #require(Session.update(model, .linkChanged(Fixture.state(2, "eth0"))).model)
        let sequence = model.changeSequence
        // The debounce ends: the held state's run replaces the waiting one; no link, device or phase changes.
        let fired = Session.update(model, .timerFired(.debounce(.link(index: 2))))
        let after = try #require(fired.model)
        #expect(after.counters.staleHookRunsDropped == model.counters.staleHookRunsDropped + 1)
        #expect(after.changeSequence == sequence + 1)
    }

    @Test("one subject runs serially: a second change waits; a third replaces it (dropped, counted, logged)")
    func serialAndStale() {
        var model = Fixture.running([Link(state: Fixture.state(2, "eth0", carrier: false))])
        let first = Session.update(model, .linkChanged(Fixture.state(2, "eth0")))
        model = first.model!
        let firstRun = Fixture.runs(first.effects).first!
        #expect(firstRun.environment.contains(LogField("NETDEVD_OPER_STATE", "carrier")))
        let second = Session.update(model, .linkChanged(Fixture.state(2, "eth0", carrier: false)))
        model = second.model!
        #expect(Fixture.runs(second.effects).isEmpty)
        let third = Session.update(model, .linkChanged(Fixture.state(2, "eth0", up: false)))
        model = third.model!
        #expect(model.counters.staleHookRunsDropped == 1)
        #expect(Fixture.logs(third.effects).contains { $0.kind == .hookRunDropped })
        let finished = Session.update(model, .hookRunFinished(HookRunResult(runID: firstRun.id, hooks: [])))
        let next = Fixture.runs(finished.effects)
        #expect(next.count == 1)
        #expect(next.first?.environment.contains(LogField("NETDEVD_OPER_STATE", "off")) == true)
        // From the state its hooks last saw (the first run's), not the replaced run's.
        #expect(next.first?.environment.contains(LogField("NETDEVD_PREV_OPER_STATE", "carrier")) == true)
    }

    @Test("drops are counted in one info entry when the summary timer fires, not each time the queue is idle")
    func dropSummary() throws {
        var model = Fixture.running([Link(state: Fixture.state(2, "eth0", carrier: false))])
        let first = Session.update(model, .linkChanged(Fixture.state(2, "eth0")))
        model = try #require(first.model)
        let firstRun = try #require(Fixture.runs(first.effects).first)
        var timersStarted = 0
        // no-carrier, off, no-carrier, off: each replaces the waiting run, none is back at "carrier".
        for change in 0..<4 {
            let next = Session.update(
                model, .linkChanged(Fixture.state(2, "eth0", up: change % 2 == 0, carrier: false)))
            model = try #require(next.model)
            timersStarted += next.effects.filter { $0 == .startTimer(.dropSummary, milliseconds: 10_000) }.count
        }
        #expect(model.counters.staleHookRunsDropped == 3)
        #expect(timersStarted == 1, "one timer for the first drop since the last count")
        // The queue goes idle: no count yet.
        let finished = Session.update(model, .hookRunFinished(HookRunResult(runID: firstRun.id, hooks: [])))
        model = try #require(finished.model)
        let second = try #require(Fixture.runs(finished.effects).first)
        model = try #require(Session.update(model, .hookRunFinished(HookRunResult(runID: second.id, hooks: []))).model)
        #expect(model.hooks.isIdle)
        #expect(model.hooks.droppedSinceSummary == 3)
        let fired = Session.update(model, .timerFired(.dropSummary))
        let summaries = Fixture.logs(fired.effects).filter { $0.kind == .hookRunDropped }
        #expect(summaries.map(\.priority) == [.info])
        #expect(summaries.first?.field("NETDEVD_HOOK_RUNS_DROPPED") == "3")
        #expect(fired.model?.hooks.droppedSinceSummary == 0)
    }

    @Test("different subjects run in parallel up to the bound, then wait their turn in order")
    func parallelismBound() {
        let links = (2...5).map { Link(state: Fixture.state(Int32($0), "eth\($0)", carrier: false)) }
        var model = Fixture.running(links, configuration: Configuration(hookParallelism: 2))
        var started: [HookRun] = []
        for index in 2...5 {
            let next = Session.update(model, .linkChanged(Fixture.state(Int32(index), "eth\(index)")))
            model = next.model!
            started += Fixture.runs(next.effects)
        }
        #expect(started.map(\.subjectName) == ["eth2", "eth3"])
        #expect(model.hooks.running.count == 2 && model.hooks.waiting.count == 2)
        let finished = Session.update(model, .hookRunFinished(HookRunResult(runID: started[1].id, hooks: [])))
        #expect(Fixture.runs(finished.effects).map(\.subjectName) == ["eth4"])
    }

    @Test("a slow link's held run holds back no search: each run id is passed once, and it starts when its run ends")
    func heldRunPassed() throws {
        let links = (2...53).map { Link(state: Fixture.state(Int32($0), "eth\($0)", carrier: false)) }
        var model = Fixture.running(links, configuration: Configuration(hookParallelism: 2))
        func send(_ event: Event) -> [HookRun] {
            let next = Session.update(model, event)
            model = next.model ?? model
            return Fixture.runs(next.effects)
        }
        let slow = try #require(send(.linkChanged(Fixture.state(2, "eth2"))).first)
        #expect(send(.linkChanged(Fixture.state(2, "eth2", carrier: false))).isEmpty)
        // 50 other links each run and finish while the slow run goes on and the newer one waits for it.
        for index in 3...52 {
            let run = try #require(send(.linkChanged(Fixture.state(Int32(index), "eth\(index)"))).first)
            #expect(send(.hookRunFinished(HookRunResult(runID: run.id, hooks: []))).isEmpty)
        }
        #expect(model.hooks.oldestQueued == model.nextHookRunID)
        // Both slots taken, a run waits for one; the held run is older, and takes the slot the slow run frees.
        let busy = try #require(send(.linkChanged(Fixture.state(52, "eth52", carrier: false))).first)
        #expect(send(.linkChanged(Fixture.state(53, "eth53"))).isEmpty)
        let held = send(.hookRunFinished(HookRunResult(runID: slow.id, hooks: [])))
        #expect(held.map(\.subjectName) == ["eth2"])
        #expect(held.first?.environment.contains(LogField("NETDEVD_OPER_STATE", "no-carrier")) == true)
        #expect(send(.hookRunFinished(HookRunResult(runID: busy.id, hooks: []))).map(\.subjectName) == ["eth53"])
        #expect(model.hooks.waiting.isEmpty && model.hooks.queued.isEmpty)
    }

    @Test("a flapping link with debounce: the journal has every change, hooks fire once for the state that held")
    func debounce() {
        var model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))],
            configuration: Configuration(debounceMilliseconds: 2_000))
        var logs: [LogEntry] = []
        var runs: [HookRun] = []
        var timers: [Effect] = []
        for carrier in [true, false, true, false, true] {
            let next = Session.update(model, .linkChanged(Fixture.state(2, "eth0", carrier: carrier)))
            model = next.model!
            logs += Fixture.logs(next.effects).filter { $0.kind == .linkStateChanged }
            runs += Fixture.runs(next.effects)
            timers += next.effects.filter { if case .startTimer = $0 { true } else { false } }
        }
        #expect(logs.count == 5)
        #expect(runs.isEmpty)
        #expect(timers.count == 5)
        #expect(timers.first == .startTimer(.debounce(.link(index: 2)), milliseconds: 2_000))
        let fired = Session.update(model, .timerFired(.debounce(.link(index: 2))))
        let fire = Fixture.runs(fired.effects)
        #expect(fire.count == 1)
        #expect(fire.first?.environment.contains(LogField("NETDEVD_PREV_OPER_STATE", "no-carrier")) == true)
        #expect(fire.first?.environment.contains(LogField("NETDEVD_OPER_STATE", "carrier")) == true)
    }

    @Test("a link that flaps back to where it was before the debounce runs no hook")
    func debounceBackToStart() {
        var model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))],
            configuration: Configuration(debounceMilliseconds: 2_000))
        model = Session.update(model, .linkChanged(Fixture.state(2, "eth0"))).model!
        model = Session.update(model, .linkChanged(Fixture.state(2, "eth0", carrier: false))).model!
        #expect(Fixture.runs(Session.update(model, .timerFired(.debounce(.link(index: 2)))).effects).isEmpty)
    }

    @Test("ignored interfaces are logged at debug priority and run no hooks")
    func ignored() {
        let model = Fixture.running(
            [Link(state: Fixture.state(2, "veth9"))], configuration: Configuration(ignoredInterfaces: ["veth*"]))
        let next = Session.update(model, .addressAdded(index: 2, Fixture.v4))
        #expect(Fixture.runs(next.effects).isEmpty)
        let logs = Fixture.logs(next.effects)
        #expect(!logs.isEmpty && logs.allSatisfy { $0.priority == .debug }, "\(logs)")
        #expect(next.model?.onlineState == .offline)
    }

    @Test("devices of tracked subsystems are added, changed and removed, with hooks; others are not kept")
    func devices() {
        var model = Fixture.running()
        let disk = Device(syspath: "/sys/devices/virtual/block/loop7", sysname: "loop7", subsystem: "block")
        let added = Session.update(model, .deviceChanged(disk, action: "add"))
        model = added.model!
        #expect(model.devices[disk.syspath] == disk)
        #expect(Fixture.runs(added.effects).map(\.event) == [.deviceAdded])
        #expect(Fixture.logs(added.effects).first?.field("NETDEVD_DEVPATH") == disk.syspath)
        #expect(Fixture.logs(added.effects).first?.field("NETDEVD_SUBSYSTEM") == "block")
        let changed = Session.update(model, .deviceChanged(disk, action: "change"))
        #expect(Fixture.logs(changed.effects).map(\.kind) == [.deviceChanged])
        let input = Device(syspath: "/sys/devices/virtual/input/input9", sysname: "input9", subsystem: "input")
        #expect(Session.update(model, .deviceChanged(input, action: "add")).model?.devices[input.syspath] == nil)
        let removed = Session.update(changed.model!, .deviceRemoved(syspath: disk.syspath))
        #expect(removed.model?.devices.isEmpty == true)
        // The add run is still running, so the change run waits; the removal makes it stale.
        #expect(Fixture.logs(removed.effects).map(\.kind) == [.deviceRemoved, .hookRunDropped])
        #expect(Fixture.logs(added.effects).first?.priority == .info)
    }

    @Test("with debug entries not kept (the daemon's default), none is made, and nothing else changes")
    func debugEntriesNotMade() throws {
        var quiet = Fixture.running(configuration: Configuration(hookParallelism: 1))
        quiet.maximumLogPriority = .info
        var verbose = quiet
        verbose.maximumLogPriority = .debug
        let interface = Device(
            syspath: "/sys/devices/virtual/net/veth7", sysname: "veth7", subsystem: "net",
            properties: ["IFINDEX": "7", "INTERFACE": "veth7"])
        let disk = Device(syspath: "/sys/block/sda", sysname: "sda", subsystem: "block")
        var quietLogs: [LogEntry] = []
        var verboseLogs: [LogEntry] = []
        var quietRuns: [HookRun] = []
        var verboseRuns: [HookRun] = []
        func step(_ event: Event) throws {
            let quietNext = Session.update(quiet, event)
            let verboseNext = Session.update(verbose, event)
            quiet = try #require(quietNext.model)
            verbose = try #require(verboseNext.model)
            quietLogs += Fixture.logs(quietNext.effects)
            verboseLogs += Fixture.logs(verboseNext.effects)
            quietRuns += Fixture.runs(quietNext.effects)
            verboseRuns += Fixture.runs(verboseNext.effects)
        }
        // The interface's device (debug), a disk added and changed while the first run runs (the change replaces
        // the waiting added run: a debug drop), then the first run succeeds (a debug entry).
        try step(.deviceChanged(interface, action: "add"))
        try step(.deviceChanged(disk, action: "add"))
        try step(.deviceChanged(disk, action: "change"))
        let first = try #require(quietRuns.first)
        let outcome = HookOutcome(name: "50-log", status: .exited(0), durationMilliseconds: 3)
        try step(.hookRunFinished(HookRunResult(runID: first.id, hooks: [outcome])))

        let debugKinds = Set(verboseLogs.filter { $0.priority == .debug }.map(\.kind))
        #expect(debugKinds == [.deviceAdded, .hookRunDropped, .hookRunFinished])
        #expect(quietLogs == verboseLogs.filter { $0.priority <= .info })
        #expect(quietRuns == verboseRuns)
        #expect(quietRuns.map(\.event) == [.deviceAdded, .deviceAdded])
        // The models differ in their level alone: the drop is still counted, its summary (info) still comes.
        var quietAtDebug = quiet
        quietAtDebug.maximumLogPriority = .debug
        #expect(quietAtDebug == verbose)
        #expect(quiet.hooks.droppedSinceSummary == 1)
    }

    @Test("an interface's own net device comes and goes at debug (its link's entries say it), with its hook runs")
    func netDevicesAtDebug() {
        let model = Fixture.running()
        let interface = Device(
            syspath: "/sys/devices/virtual/net/veth7", sysname: "veth7", subsystem: "net",
            properties: ["IFINDEX": "7", "INTERFACE": "veth7"])
        let added = Session.update(model, .deviceChanged(interface, action: "add"))
        #expect(Fixture.logs(added.effects).map(\.kind) == [.deviceAdded])
        #expect(Fixture.logs(added.effects).map(\.priority) == [.debug])
        #expect(Fixture.runs(added.effects).map(\.event) == [.deviceAdded], "hooks still run for it")
        let removed = Session.update(added.model!, .deviceRemoved(syspath: interface.syspath))
        #expect(Fixture.logs(removed.effects).first { $0.kind == .deviceRemoved }?.priority == .debug)
        // Without an IFINDEX it is not an interface's device: info, like every other device.
        var other = interface
        other.properties = [:]
        #expect(
            Fixture.logs(Session.update(model, .deviceChanged(other, action: "add")).effects).first?.priority == .info)
    }

    @Test("a failing hook is logged as a warning with its status, and counted")
    func failingHook() {
        var model = Fixture.running([Link(state: Fixture.state(2, "eth0", carrier: false))])
        let next = Session.update(model, .linkChanged(Fixture.state(2, "eth0")))
        model = next.model!
        let run = Fixture.runs(next.effects).first!
        let result = HookRunResult(
            runID: run.id,
            hooks: [
                HookOutcome(name: "10-ok", status: .exited(0), durationMilliseconds: 5),
                HookOutcome(name: "20-bad", status: .exited(3), durationMilliseconds: 7),
                HookOutcome(name: "30-slow", status: .timedOut, durationMilliseconds: 30_000),
            ])
        let finished = Session.update(model, .hookRunFinished(result))
        #expect(finished.model?.counters.hookRunsFailed == 1)
        let entry = Fixture.logs(finished.effects).first
        #expect(entry?.kind == .hookRunFailed && entry?.priority == .warning)
        #expect(entry?.message.contains("20-bad: exited with status 3; 30-slow: timed out") == true)
    }
}
