import Foundation
import KernelTestSupport
import NetdevSession
import Testing

@testable import NetdevDaemon

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

    @Test("a write that fails part way leaves the file as it was and no temporary file, and says why")
    func failedWrite() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/netdevd.prom"
        let written = MetricsTextfile.replace(path) { put throws(MetricsTextfile.WriteFailure) in
            try put(Array("old\n".utf8))
        }
        #expect(written == nil)
        let problem = MetricsTextfile.replace(path) { put throws(MetricsTextfile.WriteFailure) in
            try put(Array("new, cut short\n".utf8))
            throw MetricsTextfile.WriteFailure(problem: "No space left on device")
        }
        #expect(problem == "No space left on device")
        #expect(file(directory) == "old\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["netdevd.prom"])
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
