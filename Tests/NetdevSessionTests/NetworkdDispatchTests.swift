import MobiusCore
import Testing

@testable import NetdevSession

@Suite("networkd-dispatcher compatibility")
struct NetworkdDispatchTests {
    static let configured = Configuration(requiredInterfaces: [], ignoredInterfaces: ["ignored*"])
    static var configuration: Configuration {
        var configuration = configured
        configuration.networkdDispatcherDirectories = ["/etc/networkd-dispatcher", "/usr/lib/networkd-dispatcher"]
        return configuration
    }

    /// The runs among `effects`, as `STATE IFACE ADMIN/OPER`.
    static func runs(_ effects: [Effect]) -> [String] {
        effects.compactMap(\.dispatcherRun).map {
            "\($0.state) \($0.link.name) \($0.administrativeState)/\($0.operationalState)"
        }
    }

    static func step(_ model: inout Model, _ event: Event) -> [String] {
        let next = Session.update(model, event)
        if let changed = next.model { model = changed }
        return runs(next.effects)
    }

    /// A running session with the compatibility on, networkd's states read (networkd not running): started.
    static func started(_ configuration: Configuration = configuration) -> Model {
        var model = Fixture.running(configuration: configuration)
        _ = step(&model, .networkdStatesRead(running: false, administrative: [:]))
        return model
    }

    @Test("at start every link runs its administrative, then its operational state; without networkd: unmanaged")
    func startupTriggers() throws {
        var model = Model(configuration: Self.configuration)
        let first = Session.initiate(model)
        #expect(first.effects.first == .watchNetworkdStates(true))
        model = first.model
        let started = Session.update(
            model,
            .enumerated(
                generation: model.enumerationGeneration,
                snapshot: Snapshot(
                    links: [Fixture.loopback, Fixture.routable(2, "eth0"), Fixture.routable(3, "ignored0")],
                    devices: [])))
        // Nothing runs before networkd's states are known (the watcher answers on its own queue).
        #expect(Self.runs(started.effects) == [])
        model = try #require(started.model)
        #expect(
            Self.step(&model, .networkdStatesRead(running: false, administrative: [:])) == [
                "unmanaged lo unmanaged/carrier", "carrier lo unmanaged/carrier",
                "unmanaged eth0 unmanaged/routable", "routable eth0 unmanaged/routable",
            ])
        #expect(Self.step(&model, .networkdStatesRead(running: false, administrative: [:])) == [])
    }

    @Test("networkd's states read before the links: the start runs with networkd's administrative states")
    func startupWithNetworkd() throws {
        var model = Session.initiate(Model(configuration: Self.configuration)).model
        #expect(
            Self.step(&model, .networkdStatesRead(running: true, administrative: [1: "unmanaged", 2: "configured"]))
                == [])
        #expect(
            Self.step(
                &model,
                .enumerated(
                    generation: model.enumerationGeneration,
                    snapshot: Snapshot(links: [Fixture.loopback, Fixture.routable(2, "eth0")], devices: [])))
                == [
                    "unmanaged lo unmanaged/carrier", "carrier lo unmanaged/carrier",
                    "configured eth0 configured/routable", "routable eth0 configured/routable",
                ])
    }

    @Test("a link's life: each state entered runs once, in order; the same state again runs nothing; removal lingers")
    func life() {
        var model = Self.started()
        #expect(Self.step(&model, .linkChanged(Fixture.state(4, "veth0", up: false))) == ["off veth0 unmanaged/off"])
        #expect(
            Self.step(&model, .linkChanged(Fixture.state(4, "veth0", carrier: false)))
                == ["no-carrier veth0 unmanaged/no-carrier"])
        #expect(Self.step(&model, .linkChanged(Fixture.state(4, "veth0"))) == ["carrier veth0 unmanaged/carrier"])
        #expect(
            Self.step(&model, .addressAdded(index: 4, Fixture.v6LinkLocal)) == ["degraded veth0 unmanaged/degraded"])
        #expect(Self.step(&model, .addressAdded(index: 4, Fixture.v4)) == ["routable veth0 unmanaged/routable"])
        #expect(
            Self.step(&model, .defaultRouteAdded(index: 4, DefaultRoute(family: .ipv4, gateway: "192.0.2.1"))) == [])
        #expect(Self.step(&model, .addressAdded(index: 4, Fixture.v6)) == [])
        #expect(
            Self.step(&model, .linkChanged(Fixture.state(4, "veth0", carrier: false)))
                == ["no-carrier veth0 unmanaged/no-carrier"])
        let removed = Session.update(model, .linkRemoved(index: 4))
        let linger = removed.effects.compactMap(\.dispatcherRun)
        #expect(Self.runs(removed.effects) == ["linger veth0 linger/no-carrier"])
        #expect(linger.first?.linkIsGone == true)
        #expect(removed.model?.dispatcher.told[4] == nil)
    }

    @Test("while networkd runs, a new link waits for its state file; administrative changes run, in networkd's words")
    func withNetworkd() {
        var model = Self.started()
        #expect(Self.step(&model, .networkdStatesRead(running: true, administrative: [1: "unmanaged"])) == [])
        let added = Session.update(model, .linkChanged(Fixture.state(5, "veth1", up: false)))
        #expect(Self.runs(added.effects) == [])
        #expect(added.effects.contains(.startTimer(.networkdWait(index: 5), milliseconds: 5_000)))
        model = added.model ?? model
        #expect(Self.step(&model, .linkChanged(Fixture.state(5, "veth1", carrier: false))) == [])
        // Its first operational state, the administrative states networkd went through since pending, then the
        // operational states it entered while it waited.
        #expect(
            Self.step(&model, .networkdStateChanged(index: 5, administrative: "unmanaged")) == [
                "off veth1 unmanaged/off", "initialized veth1 initialized/off", "unmanaged veth1 unmanaged/off",
                "no-carrier veth1 unmanaged/no-carrier",
            ])
        #expect(Self.step(&model, .networkdStateChanged(index: 5, administrative: "unmanaged")) == [])
        #expect(
            Self.step(&model, .networkdStateChanged(index: 5, administrative: "configured"))
                == ["configured veth1 configured/no-carrier"])
        #expect(
            Self.step(&model, .networkdStateChanged(index: 5, administrative: "initialized"))
                == ["initialized veth1 initialized/no-carrier"])
        #expect(
            Self.step(&model, .networkdStateChanged(index: 5, administrative: "configured"))
                == ["configuring veth1 configuring/no-carrier", "configured veth1 configured/no-carrier"])
        #expect(Self.step(&model, .networkdStateChanged(index: 5, administrative: nil)) == [])
        #expect(Self.step(&model, .linkRemoved(index: 5)) == ["linger veth1 linger/no-carrier"])
        // A link networkd never wrote of runs nothing, not even linger.
        #expect(Self.step(&model, .linkChanged(Fixture.state(6, "veth2", up: false))) == [])
        #expect(Self.step(&model, .linkRemoved(index: 6)) == [])
        // networkd's directory goes: a waiting link runs as unmanaged.
        #expect(Self.step(&model, .linkChanged(Fixture.state(7, "veth3", up: false))) == [])
        #expect(
            Self.step(&model, .networkdStatesRead(running: false, administrative: [:])) == ["off veth3 unmanaged/off"])
    }

    @Test(
        "a link networkd never writes of runs as unmanaged once the wait is over; a resync runs what changed meanwhile")
    func waitAndResync() throws {
        var model = Self.started()
        _ = Self.step(&model, .networkdStatesRead(running: true, administrative: [1: "unmanaged"]))
        #expect(Self.step(&model, .linkChanged(Fixture.state(5, "veth1", up: false))) == [])
        #expect(Self.step(&model, .linkChanged(Fixture.state(5, "veth1", carrier: false))) == [])
        #expect(
            Self.step(&model, .timerFired(.networkdWait(index: 5)))
                == ["off veth1 unmanaged/off", "no-carrier veth1 unmanaged/no-carrier"])
        #expect(Self.step(&model, .timerFired(.networkdWait(index: 5))) == [])
        // During a resync nothing runs; what networkd changed meanwhile runs when it ends.
        _ = Self.step(&model, .monitorOverflowed(source: .netlink))
        #expect(Self.step(&model, .networkdStateChanged(index: 5, administrative: "configured")) == [])
        let snapshot = Snapshot(
            links: [Fixture.loopback, Link(state: Fixture.state(5, "veth1", carrier: false))], devices: [])
        #expect(
            Self.step(&model, .enumerated(generation: model.enumerationGeneration, snapshot: snapshot))
                == ["configured veth1 configured/no-carrier"])
    }

    @Test("turned on by a reload: the links' states as they are count as told; scripts run from the next change")
    func onByReload() throws {
        var model = Fixture.running([Link(state: Fixture.state(2, "eth0"))], configuration: Self.configured)
        model = try #require(Session.update(model, .reloadRequested(by: "test")).model)
        let reloaded = Session.update(model, .configurationLoaded(Self.configuration, warnings: []))
        #expect(reloaded.effects.contains(.watchNetworkdStates(true)))
        #expect(Self.runs(reloaded.effects) == [])
        model = try #require(reloaded.model)
        #expect(Self.step(&model, .networkdStatesRead(running: true, administrative: [2: "configured"])) == [])
        #expect(Self.step(&model, .networkdStateChanged(index: 2, administrative: "configured")) == [])
        #expect(
            Self.step(&model, .networkdStateChanged(index: 2, administrative: "configuring"))
                == ["configuring eth0 configuring/carrier"])
        #expect(Self.step(&model, .addressAdded(index: 2, Fixture.v4)) == ["routable eth0 configuring/routable"])
    }

    @Test("the administrative states networkd passes through are filled in, in its state machine's order")
    func passedThrough() {
        #expect(
            Transition.passedThrough(from: "pending", to: "configured") == ["initialized", "configuring", "configured"])
        #expect(Transition.passedThrough(from: "pending", to: "unmanaged") == ["initialized", "unmanaged"])
        #expect(Transition.passedThrough(from: "initialized", to: "unmanaged") == ["unmanaged"])
        #expect(Transition.passedThrough(from: "configured", to: "configuring") == ["configuring"])
        #expect(Transition.passedThrough(from: "unmanaged", to: "configured") == ["configured"])
        #expect(Transition.passedThrough(from: "configured", to: "configured") == [])
    }

    @Test("off by default, for ignored links, and once a reload empties the directories")
    func off() {
        var plain = Fixture.running()
        #expect(Session.initiate(Model()).effects.contains(.watchNetworkdStates(true)) == false)
        #expect(Self.step(&plain, .linkChanged(Fixture.state(4, "veth0"))) == [])
        var model = Self.started()
        #expect(Self.step(&model, .linkChanged(Fixture.state(8, "ignored1"))) == [])
        model = Session.update(model, .reloadRequested(by: "test")).model ?? model
        let reloaded = Session.update(model, .configurationLoaded(Self.configured, warnings: []))
        #expect(reloaded.effects.contains(.watchNetworkdStates(false)))
        model = reloaded.model ?? model
        #expect(Self.step(&model, .linkChanged(Fixture.state(4, "veth0"))) == [])
    }

    @Test("runs carry the directories, the hook timeout and parallelism in force")
    func carriesConfiguration() throws {
        var configuration = Self.configuration
        configuration.hookTimeoutMilliseconds = 5_000
        configuration.hookParallelism = 2
        let model = Self.started(configuration)
        let run = try #require(
            Session.update(model, .linkChanged(Fixture.state(4, "veth0"))).effects.compactMap(\.dispatcherRun).first)
        #expect(run.directories == ["/etc/networkd-dispatcher", "/usr/lib/networkd-dispatcher"])
        #expect(run.timeoutMilliseconds == 5_000 && run.parallelism == 2)
        #expect(run.linkIsGone == false)
    }
}
