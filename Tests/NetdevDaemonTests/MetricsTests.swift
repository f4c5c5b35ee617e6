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

    @Test("GetMetrics' reply is the text as the encoder writes it, for names that need escapes in both")
    func replyIsTheTextQuoted() throws {
        var generator = SeededGenerator(seed: 0x6d65)
        for step in 0..<50 {
            let recorder = MetricsRecorder(clock: { 1_764_301_234.123_456_7 })
            let exporter = MetricsExporter(recorder: recorder, version: "1")
            var model = Model()
            model.phase = .running
            for index in Int32(1)...Int32.random(in: 1...12, using: &generator) {
                let name = ReportJSONTests.text(&generator)
                model.setLink(Link(state: linkState(index, name, up: Bool.random(using: &generator))), at: index)
                if Bool.random(using: &generator) { recorder.note([.linkAdded(index: index)]) }
            }
            let text = String(decoding: exporter.render(model, clients: 3), as: UTF8.self)
            let expected = try JSONTextEncoder().encode(["text": text])
            let reply = String(decoding: exporter.replyParameters(model, clients: 3), as: UTF8.self)
            #expect(reply == String(decoding: expected, as: UTF8.self), "step \(step)")
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

@Suite("The metrics file", .serialized)
struct MetricsTextfileTests {
    let directory = NSTemporaryDirectory() + "netdevd-metrics-\(UInt32.random(in: 0...UInt32.max))"

    /// A running session's model (earlier ones are not written) with the directory and change sequence.
    func model(_ directory: String?, sequence: Int, phase: Phase = .running) -> Model {
        var model = Model(configuration: Configuration(metricsTextfileDirectory: directory))
        model.phase = phase
        model.changeSequence = sequence
        return model
    }

    func file(_ directory: String) -> String? {
        try? String(contentsOfFile: directory + "/netdevd.prom", encoding: .utf8)
    }

    func textfile(
        clients: Protected<Int> = Protected(0), intervalNanoseconds: UInt64 = 1_000_000_000,
        said: Protected<[String]> = Protected([])
    ) -> MetricsTextfile {
        MetricsTextfile(
            exporter: MetricsExporter(recorder: MetricsRecorder(), version: "1"), clients: { clients.withLock { $0 } },
            intervalNanoseconds: intervalNanoseconds
        ) { priority, text in said.withLock { $0.append("\(priority.rawValue) \(text)") } }
    }

    @Test("a change that comes while a slow write runs is written a second after that write ended, not before")
    func slowWrites() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Each write takes 400 ms (its count of clients is slow to come), as a render does on a large host.
        let renders = Protected(0)
        let textfile = MetricsTextfile(
            exporter: MetricsExporter(recorder: MetricsRecorder(), version: "1"),
            clients: {
                renders.withLock { $0 += 1 }
                usleep(400_000)
                return 0
            },
            intervalNanoseconds: 1_000_000_000, log: { _, _ in })
        defer { textfile.stop() }
        var ended: UInt64 = 0
        for sequence in 1...3 {
            textfile.accept(model(directory, sequence: sequence))
            // The next change comes while this write renders.
            #expect(waitFor { renders.withLock { $0 } == sequence })
            if sequence > 1 {
                let started = try #require(textfile.writes.lastStarted)
                #expect(started >= ended + 1_000_000_000, "write \(sequence) began \(started - ended) ns after")
            }
            textfile.accept(model(directory, sequence: sequence + 10))
            #expect(waitFor { textfile.writes.lastEnded.map { $0 > ended } == true })
            ended = try #require(textfile.writes.lastEnded)
        }
    }

    @Test("written whole, readable by all, when the sequence changes, at most once per interval; removed at stop")
    func writes() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clients = Protected(0)
        let textfile = textfile(clients: clients)
        // Not before the first enumeration: its model has no links yet, and would say "offline".
        textfile.accept(model(directory, sequence: 1, phase: .enumerating))
        #expect(!textfile.isWriteQueued && textfile.writes.attempts == 0 && file(directory) == nil)

        textfile.accept(model(directory, sequence: 1))
        #expect(waitFor { file(directory)?.contains("netdevd_control_clients 0") == true })
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/netdevd.prom")
        #expect((attributes[.posixPermissions] as? Int) == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["netdevd.prom"])

        // The same sequence is no change, however long after.
        clients.withLock { $0 = 5 }
        textfile.accept(model(directory, sequence: 1))
        #expect(!textfile.isWriteQueued)
        #expect(file(directory)?.contains("netdevd_control_clients 0") == true)

        // A new one is written at once (the last write is over a second old); the next not within the second.
        textfile.accept(model(directory, sequence: 2))
        #expect(waitFor { file(directory)?.contains("netdevd_control_clients 5") == true })
        let written = try #require(textfile.writes.lastEnded)
        clients.withLock { $0 = 7 }
        textfile.accept(model(directory, sequence: 3))
        #expect(waitFor { file(directory)?.contains("netdevd_control_clients 7") == true })
        // The write's own clock, not when this test saw the files: a slow machine cannot make this fail.
        #expect(try #require(textfile.writes.lastStarted) >= written + 1_000_000_000)

        // A count the model does not show (a hook's): poke writes it.
        clients.withLock { $0 = 9 }
        textfile.poke()
        #expect(waitFor { file(directory)?.contains("netdevd_control_clients 9") == true })

        textfile.stop()
        #expect(file(directory) == nil)
        textfile.accept(model(directory, sequence: 4))
        #expect(!textfile.isWriteQueued && file(directory) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test("after a stop no file is left, whether the queued write ran or not; a link where the file goes is replaced")
    func stopAndLinks() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let target = directory + "/elsewhere"
        try "keep".write(toFile: target, atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/netdevd.prom", withDestinationPath: target)
        let first = textfile()
        first.accept(model(directory, sequence: 1))
        #expect(waitFor { file(directory)?.contains("netdevd_build_info") == true })
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep")
        #expect(
            (try FileManager.default.attributesOfItem(atPath: directory + "/netdevd.prom")[.type] as? FileAttributeType)
                == .typeRegular)
        first.stop()

        let second = textfile(intervalNanoseconds: 500_000_000)
        second.accept(model(directory, sequence: 1))
        second.stop()
        // The write queued before the stop runs (finding it stopped) or has run (and removed its file).
        #expect(waitFor { !second.isWriteQueued })
        #expect(file(directory) == nil)
    }

    @Test("a directory that cannot be written is said once and tried again; a new directory takes the file")
    func failuresAndMoves() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let said = Protected<[String]>([])
        let textfile = textfile(intervalNanoseconds: 50_000_000, said: said)
        let missing = directory + "/a"
        textfile.accept(model(missing, sequence: 1))
        #expect(waitFor { said.withLock { $0.count } == 1 })
        textfile.accept(model(missing, sequence: 2))
        // The try after the first failure (5 s later) fails the same way, and is not said again.
        #expect(waitFor(seconds: 10) { textfile.writes.attempts == 2 })
        textfile.settle()
        let first = said.withLock { $0 }
        #expect(first.count == 1, "\(first)")
        #expect(first.first?.hasPrefix("4 Cannot write the metrics file \(missing)/netdevd.prom") == true)
        #expect(first.first?.contains("does not exist") == true)

        // Created, with no change to the model: the next try (10 s after the last) writes it.
        try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
        #expect(waitFor(seconds: 15) { file(missing) != nil })
        #expect(said.withLock { $0.last } == "5 The metrics file \(missing)/netdevd.prom is written again")

        let other = directory + "/b"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        textfile.accept(model(other, sequence: 3))
        #expect(waitFor { file(other) != nil })
        #expect(file(missing) == nil)
        textfile.accept(model(nil, sequence: 4))
        #expect(waitFor { file(other) == nil })
        #expect(said.withLock { $0.count } == 2)
        textfile.stop()
    }

    func waitFor(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }
}
