import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

@Suite("netdevd --replay", .serialized, .tags(.kernel), KernelHarness.enabled)
struct ReplayKernelTests {
    @Test("a recorded burst replays offline: the journal entries are the live ones, the final state the kernel's")
    func replayMatchesLive() throws {
        let record = NSTemporaryDirectory() + "netdevd-replay-\(UInt32.random(in: 0...UInt32.max)).jsonl"
        defer { try? FileManager.default.removeItem(atPath: record) }
        let daemon = try RunningDaemon(hook: "#!/bin/sh\nexit 0\n", extraArguments: ["--record", record])
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        try ipBatch(
            (0..<20).flatMap { number in
                [
                    "link add rp\(number)a type veth peer name rp\(number)b", "link set rp\(number)a up",
                    "link set rp\(number)b up", "address add 198.18.\(number).1/24 dev rp\(number)a",
                ]
            } + (0..<5).map { "link del rp\($0)a" })
        defer { _ = try? ipBatch((5..<20).map { "link del rp\($0)a" }) }
        // Settled: the same state for a second (udev's events trail the links), and no address of the kernel's still
        // tentative (a link-local address is reported once its duplicate detection is over, which can take longer
        // than that second: CI once compared while 28 of them were still tentative).
        let state = {
            try? VarlinkClient(path: daemon.socket).call("io.netdevd.GetState")["state"]?.decode(as: StateReport.self)
        }
        let tentative = {
            (try? jsonObjects(ip("-j", "address", "show")))?.contains { link in
                ((link["addr_info"] as? [[String: Any]]) ?? []).contains { $0["tentative"] as? Bool == true }
            } ?? true
        }
        var last = state()
        _ = waitUntil(timeout: 30) {
            usleep(1_000_000)
            let now = state()
            defer { last = now }
            return now != nil && now == last && !tentative()
        }
        let (kernelLinks, kernelAddresses) = try kernelLinksAndAddresses()
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)

        let replayed = try run([RunningDaemon.binary, "--replay", record, "--json"])
        #expect(try run([RunningDaemon.binary, "--replay", record, "--json"]) == replayed, "not the same twice")
        let lines = try jsonObjects(replayed)
        let final = try #require(lines.last?["state"] as? [String: Any])
        let links = (final["links"] as? [[String: Any]]) ?? []
        #expect(
            links.map { "\($0["index"] as? Int ?? 0) \($0["name"] as? String ?? "") \($0["mtu"] as? Int ?? 0)" }
                .sorted()
                == kernelLinks)
        #expect(
            links.flatMap { link in
                ((link["addresses"] as? [String]) ?? []).map { "\(link["index"] as? Int ?? 0) \($0)" }
            }.sorted() == kernelAddresses)
        #expect(lines.contains { ($0["hooks"] as? [String: Any])?["event"] as? String == "link-added" })

        // Every entry the session logged, in order, against what netdevd wrote to the journal.
        let replayedEntries = lines.compactMap { $0["journal"] as? [String: Any] }.map {
            "\($0["messageID"] as? String ?? "") \($0["message"] as? String ?? "")"
        }
        var liveEntries: [String] = []
        _ = try waitUntil(timeout: 10) {
            liveEntries = try jsonObjects(
                run(
                    "journalctl", "--no-pager", "--all", "-o", "json",
                    "_PID=\(daemon.process.processIdentifier)")
            ).compactMap { entry in
                (entry["MESSAGE_ID"] as? String).map { "\($0) \(entry["MESSAGE"] as? String ?? "")" }
            }
            return liveEntries.count >= replayedEntries.count
        }
        #expect(replayedEntries.count > 40)
        #expect(liveEntries == replayedEntries)
        let text = try run([RunningDaemon.binary, "--replay", record])
        #expect(text.contains(" hooks   link-added rp0a (run "), "\(text.prefix(2000))")
        #expect(text.contains(" journal info    rp0a: removed\n"), "\(text.prefix(2000))")
    }

    @Test("a broken recording is refused with its file and line, exit 1")
    func brokenRecording() throws {
        let record = NSTemporaryDirectory() + "netdevd-replay-broken-\(UInt32.random(in: 0...UInt32.max)).jsonl"
        defer { try? FileManager.default.removeItem(atPath: record) }
        try "{\"watchdogTick\":{}}\nnot json\n".write(toFile: record, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: RunningDaemon.binary)
        process.arguments = ["--replay", record]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(message.hasPrefix("netdevd: cannot replay \(record):2: not an event netdevd recorded (invalid JSON"))
    }
}
