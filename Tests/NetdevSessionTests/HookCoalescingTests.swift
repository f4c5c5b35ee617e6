import KernelTestSupport
import MobiusCore
import NetdevSession
import Testing

/// Links and devices that come, change and go at random while hook runs are slow to finish, with names and
/// indexes used again; records every run started. Each state carries a version (a link's MTU, a device's `V`
/// property) from one counter, so a run says which state it names and which life of its subject that state is of.
struct CoalescingSimulation {
    /// One life of a subject: from the version it was added with until it was removed.
    struct Life {
        var subject: HookSubject
        var firstVersion: Int
        var lastVersion: Int
        var removed = false
    }

    var random: SeededGenerator
    var model: Model
    var version = 0
    var lives: [Life] = []
    /// The index into `lives` of each subject's current life.
    var current: [HookSubject: Int] = [:]
    var started: [HookRun] = []
    var outstanding: [Int] = []

    init(seed: UInt64) {
        random = SeededGenerator(seed: seed)
        model = Fixture.running(configuration: Configuration(hookParallelism: Int(seed % 2) + 1))
    }

    mutating func send(_ event: Event) {
        let next = Session.update(model, event)
        model = next.model ?? model
        for case .runHooks(let run) in next.effects {
            started.append(run)
            outstanding.append(run.id)
        }
    }

    static func version(of run: HookRun) -> Int? {
        if let mtu = run.link?.state.mtu { return mtu }
        return run.device?.properties["V"].flatMap { Int($0) }
    }

    mutating func nextVersion(_ subject: HookSubject) -> Int {
        version += 1
        if let life = current[subject] {
            lives[life].lastVersion = version
        } else {
            current[subject] = lives.count
            lives.append(Life(subject: subject, firstVersion: version, lastVersion: version))
        }
        return version
    }

    mutating func removed(_ subject: HookSubject) {
        if let life = current.removeValue(forKey: subject) {
            lives[life].removed = true
        }
    }

    mutating func step() {
        let index = Int32.random(in: 2...4, using: &random)
        let link = HookSubject.link(index: index)
        let path = "/sys/devices/virtual/net/d\(Int.random(in: 0...2, using: &random))"
        let device = HookSubject.device(syspath: path)
        switch Int.random(in: 0..<10, using: &random) {
        case 0...2:
            let state = Fixture.state(
                index, "eth\(index)", up: Bool.random(using: &random), carrier: Bool.random(using: &random))
            var versioned = state
            versioned.mtu = nextVersion(link)
            send(.linkChanged(versioned))
        case 3:
            guard current[link] != nil else { return }
            removed(link)
            send(.linkRemoved(index: index))
        case 4, 5:
            let stamp = nextVersion(device)
            let value = Device(
                syspath: path, sysname: String(path.split(separator: "/").last!), subsystem: "block",
                properties: ["V": String(stamp)])
            send(.deviceChanged(value, action: "change"))
        case 6:
            guard current[device] != nil else { return }
            removed(device)
            send(.deviceRemoved(syspath: path))
        default:
            finishOne()
        }
    }

    mutating func finishOne() {
        guard !outstanding.isEmpty else { return }
        let id = outstanding.remove(at: Int.random(in: 0..<outstanding.count, using: &random))
        send(.hookRunFinished(HookRunResult(runID: id, hooks: [])))
    }

    /// The rules a hook author relies on, checked over every run started; an empty list when they held.
    func violations() -> [String] {
        var problems: [String] = []
        var lastVersion: [HookSubject: Int] = [:]
        var lastTold: [HookSubject: String] = [:]
        var runsOfLife: [Int: [HookRun]] = [:]
        for run in started where run.subject != .host {
            guard let version = Self.version(of: run) else {
                problems.append("run \(run.id) names no state")
                continue
            }
            if let last = lastVersion[run.subject], version < last {
                problems.append("run \(run.id) (\(run.event.rawValue)) names state \(version) after \(last) ran")
            }
            lastVersion[run.subject] = version
            // Changes and removals start from the state the hooks were last told about.
            if case .link = run.subject {
                let told = run.environment.first { $0.name == "NETDEVD_OPER_STATE" }?.value
                let previous = run.environment.first { $0.name == "NETDEVD_PREV_OPER_STATE" }?.value
                if run.event != .linkAdded, let last = lastTold[run.subject], previous != last {
                    problems.append(
                        "run \(run.id) (\(run.event.rawValue)) from \(previous ?? "-"), hooks last saw \(last)")
                }
                lastTold[run.subject] = run.event == .linkRemoved ? nil : told
            }
            guard
                let life = lives.indices.first(where: {
                    lives[$0].subject == run.subject && (lives[$0].firstVersion...lives[$0].lastVersion) ~= version
                })
            else {
                problems.append("run \(run.id) names state \(version) of no life of \(run.subject)")
                continue
            }
            runsOfLife[life, default: []].append(run)
        }
        for (index, life) in lives.enumerated() {
            let runs = runsOfLife[index] ?? []
            let events = runs.map(\.event.lifecycle)
            let added = events.filter { $0 == .added }.count
            let removals = events.filter { $0 == .removed }.count
            let context = "\(life.subject), life \(index): \(runs.map(\.event.rawValue))"
            if !life.removed && added != 1 {
                problems.append("\(context): still exists, \(added) added run(s)")
            }
            if added == 1 && events.first != .added {
                problems.append("\(context): a run before its added run")
            }
            if life.removed && added == 1 && (removals != 1 || events.last != .removed) {
                problems.append("\(context): removed after its added run, but no removed run last")
            }
            if life.removed && added == 0 && !runs.isEmpty {
                problems.append("\(context): added and removed before the added run, yet runs")
            }
            if removals > 1 {
                problems.append("\(context): \(removals) removed runs")
            }
        }
        return problems
    }
}

@Suite("Hook coalescing")
struct HookCoalescingTests {
    @Test("over random bursts with busy slots: one added run per life, a removed run after it, never older state")
    func coalescingRules() throws {
        for seed in UInt64(1)...1_000 {
            var simulation = CoalescingSimulation(seed: seed)
            for _ in 0..<Int.random(in: 5...120, using: &simulation.random) {
                simulation.step()
            }
            while !simulation.outstanding.isEmpty { simulation.finishOne() }
            var rest = simulation.model.hooks
            rest.droppedSinceSummary = 0
            rest.oldestQueued = 0
            #expect(rest == HookQueue(), "seed \(seed): the queue is not empty at rest")
            let problems = simulation.violations()
            #expect(problems.isEmpty, "seed \(seed): \(problems)")
            if !problems.isEmpty { return }
        }
    }

    /// Finishes every run, the oldest first, until the queue is idle; returns the runs started meanwhile.
    static func drain(_ model: inout Model, running: [HookRun]) -> [HookRun] {
        var pending = running
        var started: [HookRun] = []
        while !pending.isEmpty {
            let run = pending.removeFirst()
            let next = Session.update(model, .hookRunFinished(HookRunResult(runID: run.id, hooks: [])))
            model = next.model ?? model
            pending += Fixture.runs(next.effects)
            started += Fixture.runs(next.effects)
        }
        return started
    }

    /// One slot, taken by a run for eth0 (index 2), which came up: the model and the runs started.
    static func busyEth0() throws -> (Model, [HookRun]) {
        let model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))],
            configuration: Configuration(hookParallelism: 1))
        let first = Session.update(model, .linkChanged(Fixture.state(2, "eth0")))
        return (try #require(first.model), Fixture.runs(first.effects))
    }

    @Test("a new link whose state changes while hooks are busy runs link-added once, with the newest state")
    func addedKeepsItsEvent() throws {
        var (model, busy) = try Self.busyEth0()
        model = try #require(Session.update(model, .linkChanged(Fixture.state(3, "eth1", up: false))).model)
        model = try #require(Session.update(model, .linkChanged(Fixture.state(3, "eth1", carrier: false))).model)
        model = try #require(Session.update(model, .linkChanged(Fixture.state(3, "eth1"))).model)
        let runs = Self.drain(&model, running: busy).filter { $0.subject == .link(index: 3) }
        #expect(runs.map(\.event) == [.linkAdded])
        #expect(runs.first?.environment.contains(LogField("NETDEVD_OPER_STATE", "carrier")) == true)
        #expect(runs.first?.environment.contains { $0.name == "NETDEVD_PREV_OPER_STATE" } == false)
    }

    @Test("a device added and removed before its hooks ran runs neither; each run that did not run is counted")
    func addedThenRemovedCancel() throws {
        var model = Fixture.running(configuration: Configuration(hookParallelism: 1))
        let first = Device(syspath: "/sys/block/sda", sysname: "sda", subsystem: "block")
        let busyStep = Session.update(model, .deviceChanged(first, action: "add"))
        let busy = try #require(Fixture.runs(busyStep.effects).first)
        model = try #require(busyStep.model)
        let dropped = model.counters.staleHookRunsDropped
        let second = Device(syspath: "/sys/block/sdb", sysname: "sdb", subsystem: "block")
        model = try #require(Session.update(model, .deviceChanged(second, action: "add")).model)
        model = try #require(Session.update(model, .deviceChanged(second, action: "change")).model)
        let removal = Session.update(model, .deviceRemoved(syspath: second.syspath))
        model = try #require(removal.model)
        // Queued runs that never ran: the added run the change replaced, then the merged added run the removal
        // cancelled (the removal itself was never queued).
        #expect(model.counters.staleHookRunsDropped == dropped + 2)
        #expect(Fixture.logs(removal.effects).contains { $0.kind == .hookRunDropped && $0.priority == .debug })
        #expect(Self.drain(&model, running: [busy]).isEmpty)
        #expect(model.hooks.isIdle)
    }

    @Test("a device path used again while its removal waits: the removal runs, then the new device's added")
    func removalThenAddedUnderTheSamePath() throws {
        let disk = Device(syspath: "/sys/block/sda", sysname: "sda", subsystem: "block")
        var model = Fixture.running(configuration: Configuration(hookParallelism: 1))
        let added = Session.update(model, .deviceChanged(disk, action: "add"))
        let first = try #require(Fixture.runs(added.effects).first)
        model = try #require(added.model)
        model = try #require(Session.update(model, .deviceRemoved(syspath: disk.syspath)).model)
        model = try #require(Session.update(model, .deviceChanged(disk, action: "add")).model)
        #expect(model.hooks.waitingCount == 2)
        let afterFirst = Session.update(model, .hookRunFinished(HookRunResult(runID: first.id, hooks: [])))
        let removal = try #require(Fixture.runs(afterFirst.effects).first)
        #expect(removal.event == .deviceRemoved)
        model = try #require(afterFirst.model)
        let afterRemoval = Session.update(model, .hookRunFinished(HookRunResult(runID: removal.id, hooks: [])))
        #expect(Fixture.runs(afterRemoval.effects).map(\.event) == [.deviceAdded])
    }

    @Test("a link that changes and is then removed while its hooks are busy runs link-removed once")
    func changesThenRemoved() throws {
        var (model, busy) = try Self.busyEth0()
        model = try #require(Session.update(model, .linkChanged(Fixture.state(2, "eth0", up: false))).model)
        model = try #require(Session.update(model, .linkRemoved(index: 2)).model)
        let runs = Self.drain(&model, running: busy).filter { $0.subject == .link(index: 2) }
        #expect(runs.map(\.event) == [.linkRemoved])
        #expect(runs.first?.environment.contains(LogField("NETDEVD_OPER_STATE", "removed")) == true)
    }
}
