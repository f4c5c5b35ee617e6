import MobiusCore
import NetdevSession
import Testing

/// A change held for the debounce is told to the hooks exactly once, whatever happens while it is held.
@Suite("Debounce across lost events and removals")
struct DebounceTests {
    static let configuration = Configuration(debounceMilliseconds: 2_000)
    static let noCarrier = Link(state: Fixture.state(2, "eth0", carrier: false))
    static let carrier = Link(state: Fixture.state(2, "eth0"))

    static func environment(_ run: HookRun) -> [String: String] {
        Dictionary(run.environment.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    @Test("a change whose debounce ends while the state is read again runs once the state is in")
    func timerDuringResync() throws {
        var model = Fixture.running([Self.noCarrier], configuration: Self.configuration)
        model = try #require(Session.update(model, .linkChanged(Self.carrier.state)).model)
        #expect(model.debouncing == [.link(index: 2): .noCarrier])
        let lost = Session.update(model, .monitorOverflowed(source: .netlink))
        model = try #require(lost.model)
        #expect(model.phase == .resyncing)

        let early = Session.update(model, .timerFired(.debounce(.link(index: 2))))
        #expect(early.effects.isEmpty, "nothing is decided while the state is read again")
        #expect(early.model == nil || early.model?.debouncing == [.link(index: 2): .noCarrier])
        model = early.model ?? model

        let snapshot = Snapshot(links: [Fixture.loopback, Self.carrier], devices: [])
        let read = Session.update(model, .enumerated(generation: model.enumerationGeneration, snapshot: snapshot))
        model = try #require(read.model)
        #expect(model.phase == .running)
        #expect(Fixture.runs(read.effects).isEmpty, "the snapshot shows no change for what the model holds")
        #expect(read.effects.contains(.startTimer(.debounce(.link(index: 2)), milliseconds: 2_000)))

        let held = Session.update(model, .timerFired(.debounce(.link(index: 2))))
        let runs = Fixture.runs(held.effects)
        #expect(runs.map(\.event) == [.linkState])
        let environment = try Self.environment(#require(runs.first))
        #expect(environment["NETDEVD_OPER_STATE"] == "carrier")
        #expect(environment["NETDEVD_PREV_OPER_STATE"] == "no-carrier")
        #expect(held.model?.debouncing == [:])
    }

    @Test("a link removed while its change is held tells its hooks the state they last saw")
    func removedWhileHeld() throws {
        var model = Fixture.running([Self.carrier], configuration: Self.configuration)
        model = try #require(Session.update(model, .linkChanged(Self.noCarrier.state)).model)
        #expect(model.debouncing == [.link(index: 2): .carrier])
        let removed = Session.update(model, .linkRemoved(index: 2))
        let runs = Fixture.runs(removed.effects)
        #expect(runs.map(\.event) == [.linkRemoved])
        let environment = try Self.environment(#require(runs.first))
        #expect(environment["NETDEVD_PREV_OPER_STATE"] == "carrier")
        #expect(removed.model?.debouncing == [:])
        let late = Session.update(try #require(removed.model), .timerFired(.debounce(.link(index: 2))))
        #expect(late.effects.isEmpty)
    }

    @Test("a debounce turned off by a reload during a resync decides the held change when the state is in")
    func turnedOffDuringResync() throws {
        var model = Fixture.running([Self.noCarrier], configuration: Self.configuration)
        model = try #require(Session.update(model, .linkChanged(Self.carrier.state)).model)
        model = try #require(Session.update(model, .monitorOverflowed(source: .udev)).model)
        model.configuration.debounceMilliseconds = 0
        let fired = Session.update(model, .timerFired(.debounce(.link(index: 2))))
        #expect(fired.effects.isEmpty)
        model = fired.model ?? model
        let snapshot = Snapshot(links: [Fixture.loopback, Self.carrier], devices: [])
        let read = Session.update(model, .enumerated(generation: model.enumerationGeneration, snapshot: snapshot))
        #expect(Fixture.runs(read.effects).map(\.event) == [.linkState])
        #expect(!read.effects.contains { if case .startTimer(.debounce, _) = $0 { true } else { false } })
        #expect(read.model?.debouncing == [:])
    }
}
