import Foundation
import JSONCoding
import KernelTestSupport
import NetdevSession
import Syslog
import Testing

@testable import NetdevDaemon

/// The samples of a text exposition, by series (`name{labels}`).
func samples(_ bytes: [UInt8]) -> [String: Double] {
    var result: [String: Double] = [:]
    for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            continue
        }
        result[String(line[..<space])] = value
    }
    return result
}

/// A session driven through its update, with the activity it reports given to a recorder, as netdevd's effect
/// handlers do.
struct RecordedSession {
    var model: Model
    let recorder: MetricsRecorder

    /// `maximumLogPriority` is the daemon's `--log-level` (`.debug` makes every entry).
    init(
        links: [LinkState], configuration: Configuration = Configuration(), maximumLogPriority: LogPriority = .debug,
        clock: @escaping @Sendable () -> Double
    ) {
        recorder = MetricsRecorder(clock: clock)
        let first = Session.initiate(Model(configuration: configuration, maximumLogPriority: maximumLogPriority))
        model = first.model
        let links = links.map { Link(state: $0) }
        apply(.enumerated(generation: model.enumerationGeneration, snapshot: Snapshot(links: links, devices: [])))
    }

    mutating func apply(_ event: Event) {
        recorder.noteEvent()
        let next = Session.update(model, event)
        if let changed = next.model { model = changed }
        for case .noteActivity(let activity) in next.effects { recorder.note(activity) }
    }
}

func linkState(_ index: Int32, _ name: String, up: Bool) -> LinkState {
    LinkState(
        index: index, name: name, kind: "veth", isUp: up, hasLowerUp: up, isLoopback: false,
        kernelState: up ? .up : .down)
}

@Suite("Metrics")
struct MetricsTests {
    @Test("a link's series follow it: one 0/1 series per state, carrier, addresses, changes and their time")
    func linkSeries() {
        let time = Protected(1_000.0)
        var session = RecordedSession(links: [linkState(7, "m0", up: false)]) { time.withLock { $0 } }
        let exporter = MetricsExporter(recorder: session.recorder, version: "9.9")
        var values = samples(exporter.render(session.model, clients: 2))
        #expect(values[#"netdevd_link_operational_state{link="m0",state="off"}"#] == 1)
        #expect(values[#"netdevd_link_operational_state{link="m0",state="routable"}"#] == 0)
        #expect(values[#"netdevd_link_carrier{link="m0"}"#] == 0)
        #expect(values[#"netdevd_link_state_changes_total{link="m0"}"#] == 0)
        #expect(values[#"netdevd_link_last_change_timestamp_seconds{link="m0"}"#] == 1_000)
        #expect(values[#"netdevd_build_info{version="9.9"}"#] == 1)
        #expect(values["netdevd_control_clients"] == 2)
        #expect(values[#"netdevd_online_state{state="offline"}"#] == 1)

        time.withLock { $0 = 1_500 }
        session.apply(.linkChanged(linkState(7, "m0", up: true)))
        session.apply(
            .addressAdded(index: 7, LinkAddress(family: .ipv4, address: "192.0.2.7", prefixLength: 24)))
        values = samples(exporter.render(session.model, clients: 0))
        #expect(values[#"netdevd_link_operational_state{link="m0",state="off"}"#] == 0)
        #expect(values[#"netdevd_link_operational_state{link="m0",state="routable"}"#] == 1)
        #expect(values[#"netdevd_link_carrier{link="m0"}"#] == 1)
        #expect(values[#"netdevd_link_addresses{link="m0"}"#] == 1)
        #expect(values[#"netdevd_link_state_changes_total{link="m0"}"#] == 2)
        #expect(values[#"netdevd_link_last_change_timestamp_seconds{link="m0"}"#] == 1_500)
        #expect(values[#"netdevd_online_state{state="online"}"#] == 1)
        #expect(values["netdevd_events_total"] == 3)

        // Renamed: the old name's series go, the new name's come with the counts.
        session.apply(.linkChanged(linkState(7, "uplink", up: true)))
        values = samples(exporter.render(session.model, clients: 0))
        #expect(values.keys.filter { $0.contains(#"link="m0""#) }.isEmpty)
        #expect(values[#"netdevd_link_state_changes_total{link="uplink"}"#] == 2)

        session.apply(.linkRemoved(index: 7))
        values = samples(exporter.render(session.model, clients: 0))
        #expect(values.keys.filter { $0.hasPrefix("netdevd_link_") }.isEmpty)
        #expect(values[#"netdevd_online_state{state="offline"}"#] == 1)
    }

    @Test("an ignored link is counted at the daemon's default log level, where its entries are debug")
    func ignoredLinkCounted() {
        let time = Protected(1_000.0)
        var session = RecordedSession(
            links: [linkState(7, "veth7", up: false)], configuration: Configuration(ignoredInterfaces: ["veth*"]),
            maximumLogPriority: .info
        ) { time.withLock { $0 } }
        let exporter = MetricsExporter(recorder: session.recorder, version: "1")
        time.withLock { $0 = 1_500 }
        session.apply(.linkChanged(linkState(7, "veth7", up: true)))
        session.apply(.linkChanged(linkState(8, "veth8", up: true)))
        let values = samples(exporter.render(session.model, clients: 0))
        #expect(values[#"netdevd_link_state_changes_total{link="veth7"}"#] == 1)
        #expect(values[#"netdevd_link_last_change_timestamp_seconds{link="veth7"}"#] == 1_500)
        #expect(values[#"netdevd_link_last_change_timestamp_seconds{link="veth8"}"#] == 1_500)
        // Gone while ignored: its counts go with it, so a new link under its index starts from nothing.
        session.apply(.linkRemoved(index: 7))
        #expect(session.recorder.snapshot().links[7] == nil)
    }

    @Test("links are counted from the session's activity, not its journal entries: at level error none are made")
    func countedWithoutEntries() {
        let time = Protected(1_000.0)
        var session = RecordedSession(links: [linkState(7, "veth7", up: false)], maximumLogPriority: .error) {
            time.withLock { $0 }
        }
        let exporter = MetricsExporter(recorder: session.recorder, version: "1")
        time.withLock { $0 = 1_200 }
        session.apply(.linkChanged(linkState(7, "veth7", up: true)))
        session.apply(.monitorOverflowed(source: .netlink))
        let values = samples(exporter.render(session.model, clients: 0))
        #expect(values[#"netdevd_link_state_changes_total{link="veth7"}"#] == 1)
        #expect(values[#"netdevd_link_last_change_timestamp_seconds{link="veth7"}"#] == 1_200)
        #expect(values[#"netdevd_monitor_overflows_total{monitor="netlink"}"#] == 1)
    }

    @Test("the per-link table gives back its room when the links go, and keeps counting the ones that stay")
    func linkTableShrinks() {
        var session = RecordedSession(links: [], clock: { 1_000 })
        for index in Int32(2)...1_001 {
            session.apply(.linkChanged(linkState(index, "veth\(index)", up: true)))
        }
        session.apply(.linkChanged(linkState(2, "veth2", up: false)))
        let grown = session.recorder.linkCapacity
        #expect(grown >= 1_000)
        for index in Int32(3)...1_001 {
            session.apply(.linkRemoved(index: index))
        }
        #expect(session.recorder.snapshot().links.count == 1)
        #expect(session.recorder.linkCapacity < grown / 4)
        #expect(session.recorder.snapshot().links[2]?.stateChanges == 1)
    }

    @Test("two links of one name (a rename racing a new link) share one set of series, which goes with the last")
    func sameName() {
        let recorder = MetricsRecorder()
        let exporter = MetricsExporter(recorder: recorder, version: "1")
        var model = Model()
        model.phase = .running
        model.setLink(Link(state: linkState(3, "dup", up: true)), at: 3)
        model.setLink(Link(state: linkState(4, "dup", up: false)), at: 4)
        var values = samples(exporter.render(model, clients: 0))
        #expect(values[#"netdevd_link_carrier{link="dup"}"#] == 1)
        model.setLink(nil, at: 3)
        values = samples(exporter.render(model, clients: 0))
        #expect(values[#"netdevd_link_carrier{link="dup"}"#] == 0)
        model.setLink(nil, at: 4)
        values = samples(exporter.render(model, clients: 0))
        #expect(values.keys.filter { $0.hasPrefix("netdevd_link_") }.isEmpty)
    }

    /// A running model with a random number of links in `links`, named by `name`, each up or down at random; about
    /// half of them noted by `recorder` (so they have a last change).
    static func randomModel(
        links: ClosedRange<Int32>, recorder: MetricsRecorder, _ generator: inout SeededGenerator,
        name: (Int32, inout SeededGenerator) -> String
    ) -> Model {
        var model = Model()
        model.phase = .running
        for index in Int32(1)...Int32.random(in: links, using: &generator) {
            let state = linkState(index, name(index, &generator), up: Bool.random(using: &generator))
            model.setLink(Link(state: state), at: index)
            if Bool.random(using: &generator) { recorder.note([.linkAdded(index: index)]) }
        }
        return model
    }

    @Test("GetMetrics' reply is the text as the encoder writes it, for names that need escapes in both")
    func replyIsTheTextQuoted() throws {
        var generator = SeededGenerator(seed: 0x6d65)
        for step in 0..<50 {
            let recorder = MetricsRecorder(clock: { 1_764_301_234.123_456_7 })
            let exporter = MetricsExporter(recorder: recorder, version: "1")
            let model = Self.randomModel(links: 1...12, recorder: recorder, &generator) { _, generator in
                ReportJSONTests.text(&generator)
            }
            let text = String(decoding: exporter.render(model, clients: 3), as: UTF8.self)
            let expected = try JSONTextEncoder().encode(["text": text])
            let reply = String(decoding: exporter.replyParameters(model, clients: 3), as: UTF8.self)
            #expect(reply == String(decoding: expected, as: UTF8.self), "step \(step)")
        }
    }

    @Test("a text handed on in chunks as it is made is the text rendered whole; a chunk that fails ends it")
    func chunks() throws {
        var generator = SeededGenerator(seed: 0x6368)
        for step in 0..<40 {
            let recorder = MetricsRecorder(clock: { 1_764_301_234.5 })
            let exporter = MetricsExporter(recorder: recorder, version: "1")
            // Up to 300 links: more than two of the render's blocks of lines.
            let model = Self.randomModel(links: 1...300, recorder: recorder, &generator) { index, _ in "l\(index)" }
            let whole = exporter.render(model, clients: 1)
            let chunk = Int.random(in: 1...20_000, using: &generator)
            var pieces: [[UInt8]] = []
            exporter.render(model, clients: 1, chunk: chunk) { pieces.append($0) }
            // A Bool: a failure does not print megabytes of both.
            let same = pieces.joined().elementsEqual(whole)
            #expect(same, "step \(step), chunk \(chunk): \(pieces.map(\.count).reduce(0, +)) bytes, not \(whole.count)")
            #expect(pieces.dropLast().allSatisfy { $0.count >= chunk }, "step \(step): a piece under the chunk")
            #expect(pieces.last?.isEmpty == false)

            struct Full: Error {}
            var tries = 0
            #expect(throws: Full.self) {
                try exporter.render(model, clients: 1, chunk: 1) { (_: [UInt8]) throws(Full) in
                    tries += 1
                    if tries == 3 { throw Full() }
                }
            }
            #expect(tries == 3, "step \(step): the render went on after a chunk failed")
        }
    }

    @Test("hook runs per hook, overflows per monitor, devices per tracked subsystem")
    func counts() {
        let recorder = MetricsRecorder()
        let exporter = MetricsExporter(recorder: recorder, version: "1")
        recorder.note(
            HookRunResult(
                runID: 1,
                hooks: [
                    HookOutcome(name: "10-ok", status: .exited(0), durationMilliseconds: 1),
                    HookOutcome(name: "20-fails", status: .exited(3), durationMilliseconds: 1),
                    HookOutcome(name: "30-slow", status: .timedOut, durationMilliseconds: 1),
                    HookOutcome(name: "40-unsafe", status: .notStarted("writable by others"), durationMilliseconds: 0),
                ]))
        recorder.note(
            HookRunResult(
                runID: 2,
                hooks: [
                    HookOutcome(name: "10-ok", status: .exited(0), durationMilliseconds: 1),
                    HookOutcome(name: "20-fails", status: .notStarted("cancelled"), durationMilliseconds: 0),
                ]))
        recorder.note([.eventsLost(source: .udev)])
        var model = Model(configuration: Configuration(trackedSubsystems: ["net", "usb"]))
        model.devices["/sys/devices/virtual/net/lo"] = Device(
            syspath: "/sys/devices/virtual/net/lo", sysname: "lo", subsystem: "net")
        let values = samples(exporter.render(model, clients: 0))
        #expect(values[#"netdevd_hook_runs_started_total{hook="10-ok"}"#] == 2)
        #expect(values[#"netdevd_hook_runs_failed_total{hook="10-ok"}"#] == 0)
        #expect(values[#"netdevd_hook_runs_started_total{hook="20-fails"}"#] == 1)
        #expect(values[#"netdevd_hook_runs_failed_total{hook="20-fails"}"#] == 1)
        #expect(values[#"netdevd_hook_runs_failed_total{hook="30-slow"}"#] == 1)
        #expect(values[#"netdevd_hook_runs_started_total{hook="40-unsafe"}"#] == 0)
        #expect(values[#"netdevd_hook_runs_failed_total{hook="40-unsafe"}"#] == 1)
        #expect(values[#"netdevd_monitor_overflows_total{monitor="udev"}"#] == 1)
        #expect(values[#"netdevd_monitor_overflows_total{monitor="netlink"}"#] == 0)
        #expect(values[#"netdevd_devices{subsystem="net"}"#] == 1)
        #expect(values[#"netdevd_devices{subsystem="usb"}"#] == 0)
    }

    /// promtool from the servers `make test` unpacks (NETDEVD_TEST_SERVERS), or the installed one.
    static let promtoolPath = (ProcessInfo.processInfo.environment["NETDEVD_TEST_SERVERS"] ?? "/usr/bin") + "/promtool"

    @Test(
        "promtool accepts the text, with link names that need escaping",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: promtoolPath)
                || ProcessInfo.processInfo.environment["NETDEVD_REQUIRE_KERNEL_TESTS"] != nil,
            "needs promtool: `make test` unpacks Debian's prometheus package for it"))
    func promtool() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.promtoolPath),
            "NETDEVD_REQUIRE_KERNEL_TESTS is set and \(Self.promtoolPath) is missing")
        let names = [#"we"ird"#, #"back\slash"#, "dots.and-dashes", "\u{00e9}th0"]
        let session = RecordedSession(
            links: names.enumerated().map { linkState(Int32($0.offset + 2), $0.element, up: true) }
        ) { 1 }
        let text = MetricsExporter(recorder: session.recorder, version: "1").render(session.model, clients: 0)
        #expect(samples(text)[#"netdevd_link_carrier{link="we\"ird"}"#] == 1)
        #expect(samples(text)[#"netdevd_link_carrier{link="back\\slash"}"#] == 1)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.promtoolPath)
        process.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "promtool check metrics: \(said)")
    }
}
