import MobiusCore
import MobiusTest
import NetdevSession
import Testing

@Suite("Reload and stop")
struct ReloadAndStopTests {
    @Test("SIGHUP: RELOADING=1 (with MONOTONIC_USEC, added when sent), load, then READY=1 with the new config")
    func reload() {
        var model = Fixture.running([Fixture.routable(2, "eth0")])
        let hup = Session.update(model, .signalReceived(.hangUp))
        model = hup.model!
        #expect(model.phase == .reloading)
        #expect(
            hup.effects == [.notify([.reloading, .status("Reloading configuration (SIGHUP)…")]), .loadConfiguration])
        var configuration = Configuration()
        configuration.debounceMilliseconds = 500
        let loaded = Session.update(model, .configurationLoaded(configuration, warnings: []))
        #expect(loaded.model?.phase == .running)
        #expect(loaded.model?.configuration.debounceMilliseconds == 500)
        #expect(Fixture.notifications(loaded.effects).first == .ready)
        #expect(Fixture.logs(loaded.effects).map(\.kind) == [.reloaded])
    }

    @Test("a broken drop-in keeps the old configuration and logs the error with file and line")
    func brokenReload() {
        var model = Fixture.running()
        model = Session.update(model, .reloadRequested(by: "uid 0")).model!
        let diagnostic = Diagnostic(
            file: "/etc/netdevd/netdevd.conf.d/50-bad.conf", line: 12,
            message: "unknown key 'Requiredinterface', did you mean 'RequiredInterfaces'?")
        let rejected = Session.update(model, .configurationRejected([diagnostic]))
        #expect(rejected.model?.configuration == Configuration())
        #expect(rejected.model?.phase == .running)
        let entry = Fixture.logs(rejected.effects).first
        #expect(entry?.kind == .reloadFailed && entry?.priority == .error)
        #expect(entry?.field("NETDEVD_CONFIG_FILE") == "/etc/netdevd/netdevd.conf.d/50-bad.conf")
        #expect(entry?.field("NETDEVD_CONFIG_LINE") == "12")
        #expect(entry?.message.contains("50-bad.conf:12: unknown key 'Requiredinterface'") == true)
        #expect(Fixture.notifications(rejected.effects).first == .ready)
    }

    @Test("a reload asked for while enumerating runs after the snapshot; one asked for during a reload, after it")
    func deferredReloads() {
        var model = Session.initiate(Model()).model
        model = Session.update(model, .signalReceived(.hangUp)).model!
        #expect(model.reloadPending && model.phase == .enumerating)
        let done = Session.update(model, .enumerated(generation: 1, snapshot: Snapshot(links: [], devices: [])))
        #expect(done.effects.contains(.loadConfiguration))
        model = done.model!
        #expect(model.phase == .reloading)
        model = Session.update(model, .signalReceived(.hangUp)).model!
        let loaded = Session.update(model, .configurationLoaded(Configuration(), warnings: []))
        #expect(loaded.effects.filter { $0 == .loadConfiguration }.count == 1)
        #expect(loaded.model?.phase == .reloading)
    }

    @Test("each reload's outcome says which requests it answers: one made during a reload waits for the next")
    func reloadOutcomes() {
        var model = Fixture.running()
        model = Session.update(model, .reloadRequested(by: "uid 0")).model!
        #expect(model.reloadRequests == 1 && model.reloadCovers == 1)
        // A second request while the files are being read: the reload in flight does not answer it.
        model = Session.update(model, .reloadRequested(by: "uid 0")).model!
        #expect(model.reloadRequests == 2 && model.reloadCovers == 1)
        let warning = Diagnostic(file: "a.conf", line: 2, message: "unknown key 'X' in [Online]; the line is ignored")
        let first = Session.update(model, .configurationLoaded(Configuration(), warnings: [warning]))
        model = first.model!
        #expect(model.lastReload == ReloadOutcome(covers: 1, warnings: [warning.description], errors: []))
        #expect(first.effects.contains(.loadConfiguration), "the pending request's reload starts")
        #expect(model.reloadCovers == 2)
        let rejection = Diagnostic(file: "b.conf", line: 0, message: "is not UTF-8 text")
        model = Session.update(model, .configurationRejected([rejection])).model!
        #expect(model.lastReload == ReloadOutcome(covers: 2, warnings: [], errors: [rejection.description]))
    }

    @Test("a reload that changes Subsystems= re-reads the devices even when another reload waits behind it")
    func pendingReloadAfterSubsystems() {
        var model = Fixture.running()
        model = Session.update(model, .reloadRequested(by: "uid 0")).model!
        model = Session.update(model, .reloadRequested(by: "uid 0")).model!
        #expect(model.reloadPending)
        var configuration = Configuration()
        configuration.trackedSubsystems = ["net"]
        let loaded = Session.update(model, .configurationLoaded(configuration, warnings: []))
        // The devices are re-read for the new subsystems first; the waiting reload starts once that is done.
        #expect(loaded.effects.contains(.enumerate(generation: model.enumerationGeneration + 1, subsystems: ["net"])))
        #expect(!loaded.effects.contains(.loadConfiguration))
        model = loaded.model!
        #expect(model.phase == .resyncing && model.reloadPending)
        let resynced = Session.update(
            model, .enumerated(generation: model.enumerationGeneration, snapshot: Snapshot(links: [], devices: [])))
        #expect(resynced.effects.contains(.loadConfiguration))
        #expect(resynced.model?.reloadCovers == 2)
    }

    @Test("configuration warnings are logged with file and line; the configuration still applies")
    func warnings() {
        var model = Fixture.running()
        model = Session.update(model, .signalReceived(.hangUp)).model!
        let warning = Diagnostic(file: "/etc/netdevd/netdevd.conf", line: 3, message: "HookTimeoutSec= is very short")
        let loaded = Session.update(
            model, .configurationLoaded(Configuration(hookTimeoutMilliseconds: 10), warnings: [warning]))
        #expect(Fixture.logs(loaded.effects).map(\.kind) == [.configurationWarning, .reloaded])
        #expect(loaded.model?.configuration.hookTimeoutMilliseconds == 10)
    }

    @Test("SIGTERM with nothing running: STOPPING=1, journal, exit 0")
    func stopIdle() {
        let stop = Session.update(Fixture.running(), .signalReceived(.terminate))
        #expect(stop.model?.phase == .stopped)
        #expect(Fixture.notifications(stop.effects) == [.stopping, .status("Stopping…")])
        #expect(Fixture.logs(stop.effects).map(\.kind) == [.stopping, .stopped])
        #expect(stop.effects.last == .exit(status: 0))
    }

    @Test("SIGTERM while enumerating stops at once; the late snapshot is ignored")
    func stopWhileEnumerating() {
        let model = Session.initiate(Model()).model
        let stop = Session.update(model, .signalReceived(.interrupt))
        #expect(stop.model?.phase == .stopped)
        #expect(stop.effects.last == .exit(status: 0))
        let late = Session.update(stop.model!, .enumerated(generation: 1, snapshot: Snapshot(links: [], devices: [])))
        #expect(late.effects.isEmpty)
        #expect(late.model?.phase == .stopped)
    }

    @Test("SIGTERM while hooks run: queued runs dropped, running ones stopped (SIGTERM) and awaited, then exit 0")
    func stopWhileHooksRun() {
        var model = Fixture.running([Link(state: Fixture.state(2, "eth0", carrier: false))])
        model = Session.update(model, .linkChanged(Fixture.state(2, "eth0"))).model!
        model = Session.update(model, .linkChanged(Fixture.state(2, "eth0", carrier: false))).model!
        #expect(model.hooks.running.count == 1 && model.hooks.waiting.count == 1)
        let stop = Session.update(model, .signalReceived(.terminate))
        model = stop.model!
        #expect(model.phase == .stopping)
        #expect(model.hooks.waiting.isEmpty)
        #expect(stop.effects.contains(.startTimer(.stopDeadline, milliseconds: 10_000)))
        #expect(Fixture.logs(stop.effects).first?.message.contains("1 queued hook run dropped") == true)
        #expect(Fixture.logs(stop.effects).first?.message.contains("1 running hook run sent SIGTERM") == true)
        let runID = model.hooks.running.values.first!.id
        #expect(stop.effects.contains(.cancelHooks([runID])))
        let killed = HookOutcome(name: "50-slow", status: .killed(signal: 15), durationMilliseconds: 20)
        let finished = Session.update(model, .hookRunFinished(HookRunResult(runID: runID, hooks: [killed])))
        // Its end is logged as expected (a notice), not as a failure.
        let end = Fixture.logs(finished.effects).first { $0.kind == .hookRunFailed }
        #expect(end?.priority == .notice)
        #expect(end?.message.contains("stopped with netdevd: 50-slow: killed by signal 15") == true)
        #expect(finished.model?.counters.hookRunsFailed == model.counters.hookRunsFailed)
        #expect(finished.model?.phase == .stopped)
        #expect(finished.effects.contains(.cancelTimer(.stopDeadline)))
        #expect(finished.effects.last == .exit(status: 0))
    }

    @Test("a hook still running at the stop deadline is cancelled again (SIGKILL), and netdevd exits 0")
    func stopDeadline() {
        var model = Fixture.running([Link(state: Fixture.state(2, "eth0", carrier: false))])
        model = Session.update(model, .linkChanged(Fixture.state(2, "eth0"))).model!
        model = Session.update(model, .signalReceived(.terminate)).model!
        let runID = model.hooks.running.values.first!.id
        let deadline = Session.update(model, .timerFired(.stopDeadline))
        #expect(deadline.effects.first == .cancelHooks([runID]))
        #expect(deadline.model?.phase == .stopped)
        #expect(deadline.effects.last == .exit(status: 0))
    }
}

@Suite("Reload while resyncing")
struct ReloadDuringResyncTests {
    @Test("a reload that changes the tracked subsystems during a resync restarts the resync with the new ones")
    func newSubsystemsRestartTheResync() throws {
        var model = Fixture.running()
        model = try #require(Session.update(model, .reloadRequested(by: "test")).model)
        model = try #require(Session.update(model, .monitorOverflowed(source: .netlink)).model)
        #expect(model.phase == .resyncing)
        let generation = model.enumerationGeneration
        let tracked = ["net", "input"]
        let loaded = Session.update(
            model, .configurationLoaded(Configuration(trackedSubsystems: tracked), warnings: []))
        // The resync in flight reads the old subsystems (and the udev filter follows the enumeration): a new one.
        #expect(loaded.effects.contains(.enumerate(generation: generation + 1, subsystems: tracked)))
        #expect(loaded.model?.enumerationGeneration == generation + 1)
        let same = Session.update(
            model,
            .configurationLoaded(Configuration(trackedSubsystems: model.configuration.trackedSubsystems), warnings: []))
        #expect(!same.effects.contains { if case .enumerate = $0 { true } else { false } })
    }

    @Test("StopTimeoutSec=infinity: running hooks are sent SIGTERM and awaited with no deadline")
    func stopWithoutDeadline() {
        var configuration = Configuration()
        configuration.stopTimeoutMilliseconds = nil
        var model = Fixture.running(
            [Link(state: Fixture.state(2, "eth0", carrier: false))], configuration: configuration)
        model = Session.update(model, .linkChanged(Fixture.state(2, "eth0"))).model!
        let runID = model.hooks.running.values.first!.id
        let stop = Session.update(model, .signalReceived(.terminate))
        #expect(stop.effects.contains(.cancelHooks([runID])))
        #expect(!stop.effects.contains { if case .startTimer(.stopDeadline, _) = $0 { true } else { false } })
        #expect(stop.model?.phase == .stopping)
        let killed = HookOutcome(name: "50-slow", status: .killed(signal: 15), durationMilliseconds: 20)
        let finished = Session.update(stop.model!, .hookRunFinished(HookRunResult(runID: runID, hooks: [killed])))
        #expect(finished.effects.last == .exit(status: 0))
    }
}
