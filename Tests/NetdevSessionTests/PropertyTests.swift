import Foundation
import KernelTestSupport
import MobiusCore
import NetdevSession
import Testing

/// A simulated host: the kernel's truth, what the session was told, and the hook runs it started. Drives a
/// session with random events the way the daemon would, and checks the invariants after every step.
struct Simulation {
    var random: SeededGenerator
    var model: Model
    /// The kernel's real state, kept by a naive fold that shares no code with the session.
    var truth: [Int32: Link] = [:]
    /// The truth when each enumeration was requested, by generation.
    var dumps: [Int: [Int32: Link]] = [:]
    var outstandingRuns: [Int: HookSubject] = [:]
    var finishedRuns: Set<Int> = []
    var cancelledRuns: Set<Int> = []
    var events: [Event] = []
    var failures: [String] = []

    static let legal: [Phase: Set<Phase>] = [
        .starting: [.enumerating],
        .enumerating: [.running, .reloading, .stopped],
        .running: [.resyncing, .reloading, .stopping, .stopped],
        .resyncing: [.running, .reloading, .stopping, .stopped, .enumerating],
        .reloading: [.running, .resyncing, .stopping, .stopped],
        .stopping: [.stopped],
        .stopped: [],
    ]

    init(seed: UInt64) {
        random = SeededGenerator(seed: seed)
        truth = [1: Fixture.loopback]
        // Odd seeds require interfaces, so the online tally's per-requirement counts are exercised too.
        let required =
            seed % 2 == 0
            ? []
            : [
                InterfaceRequirement(pattern: "eth[23]"),
                InterfaceRequirement(pattern: "eth4", minimumState: .degraded),
            ]
        let first = Session.initiate(
            Model(configuration: Configuration(requiredInterfaces: required, hookParallelism: 2)))
        model = first.model
        observe(first.effects, before: .starting)
    }

    mutating func send(_ event: Event) {
        events.append(event)
        let before = model.phase
        let previous = model
        let next = Session.update(model, event)
        model = next.model ?? model
        observe(next.effects, before: before)
        checkPublishedChange(from: previous)
    }

    /// What a model says changed (``Model/lastChange``) names every link and device that differs from the model
    /// before it; a model that keeps its change sequence changed no link or device; the device counts are the
    /// devices' (what monitors and metrics are built from instead of comparing whole models).
    mutating func checkPublishedChange(from previous: Model) {
        let changedLinks = Set(previous.links.keys).union(model.links.keys).filter {
            previous.links[$0] != model.links[$0]
        }
        let changedDevices = Set(previous.devices.keys).union(model.devices.keys).filter {
            previous.devices[$0] != model.devices[$0]
        }
        if model.changeSequence == previous.changeSequence {
            if !changedLinks.isEmpty || !changedDevices.isEmpty {
                failures.append("links \(changedLinks.sorted()) changed without a new change sequence")
            }
        } else if !model.lastChange.everything {
            let unnamed = changedLinks.subtracting(model.lastChange.links)
            let unnamedDevices = changedDevices.subtracting(model.lastChange.devices)
            if model.changeSequence != previous.changeSequence + 1 || !unnamed.isEmpty || !unnamedDevices.isEmpty {
                failures.append(
                    "sequence \(previous.changeSequence) → \(model.changeSequence) says \(model.lastChange), "
                        + "but links \(unnamed.sorted()) and devices \(unnamedDevices.sorted()) changed too")
            }
        }
        let counted = model.devices.values.reduce(into: [String: Int]()) { $0[$1.subsystem, default: 0] += 1 }
        if model.deviceCounts != counted {
            failures.append("device counts \(model.deviceCounts), but the devices make \(counted)")
        }
    }

    mutating func observe(_ effects: [Effect], before: Phase) {
        if model.phase != before && !(Self.legal[before]?.contains(model.phase) ?? false) {
            failures.append("illegal transition \(before) → \(model.phase)")
        }
        for effect in effects {
            switch effect {
            case .enumerate(let generation, _):
                dumps[generation] = truth
            case .runHooks(let run):
                if outstandingRuns.values.contains(run.subject) {
                    failures.append("two runs at once for \(run.subject)")
                }
                outstandingRuns[run.id] = run.subject
            case .cancelHooks(let ids):
                cancelledRuns.formUnion(ids)
            default:
                break
            }
        }
        let counted = OnlineEvaluation.state(of: model.links.values, configuration: model.configuration)
        if model.onlineState != counted {
            failures.append("online state \(model.onlineState) from the tally, \(counted) from the links")
        }
        let missing = OnlineEvaluation.missing(of: model.links.values, configuration: model.configuration)
        if (model.onlineMissing ?? []) != missing {
            failures.append("online missing \(model.onlineMissing ?? []) from the tally, \(missing) from the links")
        }
        let running = Set(model.hooks.running.values.map(\.id))
        if !running.isSubset(of: Set(outstandingRuns.keys)) {
            failures.append("model runs \(running) not among started runs")
        }
    }

    /// A random kernel change: applied to the truth, and delivered unless `lost`.
    mutating func kernelChange(lost: Bool) {
        let index = Int32.random(in: 2...5, using: &random)
        let event: Event
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1:
            let state = Fixture.state(
                index, "eth\(index)", up: Bool.random(using: &random), carrier: Bool.random(using: &random))
            event = .linkChanged(state)
        case 2:
            event = .linkRemoved(index: index)
        case 3:
            event = .addressAdded(
                index: index, [Fixture.v4, Fixture.v6, Fixture.v6LinkLocal].randomElement(using: &random)!)
        case 4:
            event = .addressRemoved(
                index: index, [Fixture.v4, Fixture.v6, Fixture.v6LinkLocal].randomElement(using: &random)!)
        default:
            event = .defaultRouteAdded(index: index, DefaultRoute(family: .ipv4, gateway: "192.0.2.1"))
        }
        naiveFold(event)
        if !lost {
            send(event)
        }
    }

    /// The kernel's rules, written independently: what the truth becomes after `event`.
    mutating func naiveFold(_ event: Event) {
        switch event {
        case .linkChanged(let state):
            truth[state.index] = Link(
                state: state, addresses: truth[state.index]?.addresses ?? [],
                defaultRoutes: truth[state.index]?.defaultRoutes ?? [])
        case .linkRemoved(let index):
            truth[index] = nil
        case .addressAdded(let index, let address):
            if truth[index] != nil && !truth[index]!.addresses.contains(address) {
                truth[index]!.addresses.append(address)
            }
        case .addressRemoved(let index, let address):
            truth[index]?.addresses.removeAll { $0 == address }
        case .defaultRouteAdded(let index, let route):
            if truth[index] != nil && !truth[index]!.defaultRoutes.contains(route) {
                truth[index]!.defaultRoutes.append(route)
            }
        default:
            break
        }
    }

    mutating func step() {
        switch Int.random(in: 0..<20, using: &random) {
        case 0...8:
            kernelChange(lost: false)
        case 9:
            // Events lost to an overflow, then the overflow is reported.
            for _ in 0..<Int.random(in: 1...3, using: &random) { kernelChange(lost: true) }
            send(.monitorOverflowed(source: Bool.random(using: &random) ? .udev : .netlink))
        case 10, 11:
            if let dump = dumps[model.enumerationGeneration], model.phase == .enumerating || model.phase == .resyncing {
                send(
                    .enumerated(
                        generation: model.enumerationGeneration,
                        snapshot: Snapshot(links: Array(dump.values), devices: [])))
            }
        case 12, 13, 14:
            if let id = outstandingRuns.keys.sorted().randomElement(using: &random) {
                outstandingRuns[id] = nil
                finishedRuns.insert(id)
                send(.hookRunFinished(HookRunResult(runID: id, hooks: [])))
            }
        case 15:
            send(.signalReceived(.hangUp))
        case 16:
            if model.reloadInFlight {
                send(
                    Bool.random(using: &random)
                        ? .configurationLoaded(Configuration(hookParallelism: 2), warnings: [])
                        : .configurationRejected([Diagnostic(file: "x.conf", line: 1, message: "bad")]))
            }
        case 17:
            send(.watchdogTick)
        case 18:
            send(.timerFired(.debounce(.link(index: Int32.random(in: 2...5, using: &random)))))
        default:
            if Int.random(in: 0..<10, using: &random) == 0 {
                send(.signalReceived(.terminate))
            } else {
                deviceChange()
            }
        }
    }

    /// A udev event for one of a few disks and ttys: added or changed, removed, or moved to another path.
    mutating func deviceChange() {
        let names = ["sda", "sdb", "ttyS0", "ttyS1"]
        let name = names.randomElement(using: &random) ?? "sda"
        let subsystem = name.hasPrefix("tty") ? "tty" : "block"
        let device = Device(
            syspath: "/sys/class/\(subsystem)/\(name)", sysname: name, subsystem: subsystem,
            properties: ["N": String(Int.random(in: 0..<3, using: &random))])
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            send(.deviceChanged(device, action: "change"))
        case 1:
            send(.deviceRemoved(syspath: device.syspath))
        default:
            let other = names.randomElement(using: &random) ?? "sdb"
            send(.deviceMoved(device, fromSyspath: "/sys/class/\(subsystem)/\(other)"))
        }
    }

    /// Brings the session to rest: the current enumeration answered, every run finished, reloads answered.
    mutating func settle() {
        for _ in 0..<50 {
            if model.phase == .enumerating || model.phase == .resyncing, let dump = dumps[model.enumerationGeneration] {
                send(
                    .enumerated(
                        generation: model.enumerationGeneration,
                        snapshot: Snapshot(links: Array(dump.values), devices: [])))
            } else if model.reloadInFlight {
                send(.configurationLoaded(Configuration(hookParallelism: 2), warnings: []))
            } else if let id = outstandingRuns.keys.sorted().first {
                outstandingRuns[id] = nil
                finishedRuns.insert(id)
                send(.hookRunFinished(HookRunResult(runID: id, hooks: [])))
            } else {
                return
            }
        }
    }
}

@Suite("Session properties over random event sequences")
struct PropertyTests {
    @Test("invariants hold for 2,000 random sequences of up to 80 events")
    func invariants() throws {
        var comparedWithKernel = 0
        for seed in UInt64(1)...2_000 {
            var simulation = Simulation(seed: seed)
            for _ in 0..<Int.random(in: 10...80, using: &simulation.random) {
                simulation.step()
            }
            simulation.settle()
            let context = "seed \(seed)"
            #expect(simulation.failures.isEmpty, "\(context): \(simulation.failures)")
            if simulation.model.phase == .running {
                comparedWithKernel += 1
                #expect(
                    Dictionary(uniqueKeysWithValues: simulation.model.links.map { ($0.key, $0.value) })
                        == simulation.truth, "\(context): the model drifted from the kernel")
            }
            let unaccounted = simulation.outstandingRuns.keys.filter { !simulation.cancelledRuns.contains($0) }
            #expect(unaccounted.isEmpty, "\(context): runs never finished or cancelled: \(unaccounted)")
            if !simulation.failures.isEmpty { return }
        }
        // The drift check above is made only for sequences that end running (a stop ends the others): most must.
        #expect(comparedWithKernel >= 1_000, "only \(comparedWithKernel) of 2,000 sequences ended running")
    }

    @Test("replaying the same events gives the same models and effects, and models and events survive JSON")
    func replayAndCodable() throws {
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        for seed in UInt64(1)...200 {
            var simulation = Simulation(seed: seed)
            let start = simulation.model
            for _ in 0..<60 { simulation.step() }
            let once = Session.replay(events: simulation.events, from: start)
            let twice = Session.replay(events: simulation.events, from: start)
            #expect(once == twice, "seed \(seed)")
            #expect(once.last?.model ?? start == simulation.model, "seed \(seed)")
            let model = try decoder.decode(Model.self, from: encoder.encode(simulation.model))
            #expect(model == simulation.model, "seed \(seed)")
            let events = try decoder.decode([Event].self, from: encoder.encode(simulation.events))
            #expect(events == simulation.events, "seed \(seed)")
        }
    }

    @Test("a model encoded without maximumLogPriority (before it existed) decodes making every entry, all else kept")
    func decodesWithoutLogPriority() throws {
        var simulation = Simulation(seed: 7)
        for _ in 0..<60 { simulation.step() }
        var quiet = simulation.model
        quiet.maximumLogPriority = .info
        let encoded = try JSONEncoder().encode(quiet)
        var object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        #expect(object.removeValue(forKey: "maximumLogPriority") != nil)
        let older = try JSONSerialization.data(withJSONObject: object)
        let decoded = try JSONDecoder().decode(Model.self, from: older)
        #expect(decoded.maximumLogPriority == .debug)
        var expected = quiet
        expected.maximumLogPriority = .debug
        #expect(decoded == expected)
    }
}
