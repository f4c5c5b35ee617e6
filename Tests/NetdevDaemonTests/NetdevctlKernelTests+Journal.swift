import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Synchronization
import Systemd
import Testing
import Varlink

extension NetdevctlKernelTests {
    @Test(
        "status LINK ends with the link's journal entries; log: netdevd's own about a link, -n, JSON, -f, a directory"
    )
    func journal() throws {
        let daemon = try RunningDaemon()
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let socket = ["--socket", daemon.socket]
        try ip("link", "add", "jl0", "type", "veth", "peer", "name", "jl1")
        defer { _ = try? ip("link", "del", "jl0") }
        // No IPv6 link-local addresses: jl0 settles at carrier, and the entries about it stop there.
        for name in ["jl0", "jl1"] { try ip("link", "set", name, "addrgenmode", "none") }
        try ip("link", "set", "jl0", "up")
        try ip("link", "set", "jl1", "up")
        // Another program's entry about the same link never shows.
        var impostor = JournalEntry(message: "impostor says jl0", priority: .notice)
        impostor.append(.normalizing("NETDEVD_IFNAME"), "jl0")
        try Journal(identifier: "impostor", target: .journal).send(impostor)
        #expect(
            waitUntil {
                (try? run("journalctl", "--no-pager", "-o", "cat", "SYSLOG_IDENTIFIER=impostor"))?.contains("jl0")
                    == true
            }, "the impostor's entry never reached the journal: its absence below would prove nothing")
        var log = (status: Int32(0), output: "", errors: "")
        #expect(
            waitUntil(timeout: 10) {
                log = (try? netdevctl(["log", "jl0"])) ?? log
                return log.output.contains("jl0: ") && log.output.contains("→ carrier")
            }, "no entries about jl0: \(log)")
        let lines = log.output.split(separator: "\n")
        #expect(log.status == 0 && !lines.isEmpty)
        #expect(lines.allSatisfy { $0.contains(" netdevd[\(daemon.process.processIdentifier)]: ") }, "\(log.output)")
        #expect(!log.output.contains("impostor"))
        #expect(!log.output.contains("jl1: "), "an entry about jl1 shows for jl0")

        let status = try netdevctl(["status", "jl0"] + socket)
        #expect(status.status == 0)
        let shown = status.output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(shown.first?.hasSuffix(": jl0") == true, "\(status.output)")
        let tail = Array(lines.suffix(10)).map(String.init)
        #expect(Array(shown.suffix(tail.count + 1).dropLast()).map(String.init) == tail, "\(status.output)")

        let one = try netdevctl(["log", "jl0", "-n", "1"])
        #expect(one.output.split(separator: "\n").map(String.init) == [String(lines.last!)])
        #expect(try netdevctl(["log", "jl0", "-n", "0"]).output == "-- No entries about 'jl0' --\n")
        let json = try netdevctl(["log", "jl0", "--json=short"])
        let objects = try jsonObjects(json.output)
        #expect(objects.count == lines.count)
        #expect(
            objects.allSatisfy { $0["NETDEVD_IFNAME"] as? String == "jl0" && $0["identifier"] as? String == "netdevd" })
        // Rotated (journald archives the file and starts another): the entries are still read, from the archive.
        let journald = try #require(BadDaysKernelTests.privateJournald(), "no private systemd-journald here")
        let archivesBefore = try run("sh", "-c", "ls /run/log/journal/*/").split(separator: "\n").count
        kill(journald, SIGUSR2)
        #expect(
            waitUntil {
                (try? run("sh", "-c", "ls /run/log/journal/*/").split(separator: "\n").count) ?? 0 > archivesBefore
            })
        #expect(try netdevctl(["log", "jl0"]).output.hasPrefix(log.output))
        // Every netdevd entry without a subject: the start's included.
        let all = try netdevctl(["log", "--since", "-1h"])
        #expect(all.output.contains("jl0") && all.output.contains("jl1"))

        let nothing = try netdevctl(["log", "nosuchlink"])
        #expect(nothing.status == 0 && nothing.output == "-- No entries about 'nosuchlink' --\n")
        let badTime = try netdevctl(["log", "jl0", "--since", "teatime"])
        #expect(badTime.status == 2 && badTime.errors.contains("'--since teatime' is not a time"))
        let refused = try netdevctl(["log", "jl0"], as: "65534")
        #expect(refused.status == 0 && refused.errors.contains("'systemd-journal' or 'adm' group"), "\(refused)")
        #expect(refused.output.isEmpty)
        let refusedStatus = try netdevctl(["status", "jl0"] + socket, as: "65534")
        #expect(refusedStatus.status == 0 && refusedStatus.output.contains("Type: veth"))
        #expect(refusedStatus.errors.contains("'systemd-journal' or 'adm' group"))
        #expect(try netdevctl(["log", ""]).status == 2)

        // The journal files themselves, as a central journal's directory would hold them.
        let directory = try netdevctl(["log", "jl0", "--directory", "/run/log/journal"])
        #expect(directory.status == 0 && directory.output.hasPrefix(log.output.prefix(log.output.count / 2)))
        let missing = try netdevctl(["log", "--directory", "/nonexistent/journal"])
        #expect(missing.status == 1 && missing.errors.contains("/nonexistent/journal is not a directory"))
        // A corrupted file (its second half overwritten, as a crash mid-write or a bad disk leaves it): what can be
        // read is, the rest is skipped or said; never a crash.
        let corrupted = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())").path
        try FileManager.default.createDirectory(atPath: corrupted, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: corrupted) }
        let files = try run("sh", "-c", "ls /run/log/journal/*/*.journal").split(separator: "\n").map(String.init)
        for (index, file) in files.enumerated() {
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
            for offset in stride(from: bytes.count / 2, to: bytes.count, by: 7) { bytes[offset] = 0xA5 }
            try Data(bytes).write(to: URL(fileURLWithPath: "\(corrupted)/system@\(index).journal"))
        }
        #expect(!files.isEmpty)
        let damaged = try netdevctl(["log", "jl0", "--directory", corrupted])
        #expect(
            damaged.status == 0 || (damaged.status == 1 && damaged.errors.hasPrefix("netdevctl: journal: ")),
            "\(damaged)")

        // -f: what comes after, as it comes.
        let follower = Process()
        follower.executableURL = URL(fileURLWithPath: RunningDaemon.built("netdevctl"))
        follower.arguments = ["log", "jl0", "-f", "-n", "1"]
        let pipe = Pipe()
        follower.standardOutput = pipe
        try follower.run()
        defer { if follower.isRunning { follower.terminate() } }
        let followed = Protected("")
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            followed.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        // The newest entry printed says it has read the journal and waits for more; only then the change.
        #expect(waitUntil(timeout: 10) { followed.withLock { $0 }.hasSuffix("\n") })
        try ip("link", "set", "jl0", "down")
        #expect(
            waitUntil(timeout: 10) { followed.withLock { $0 }.contains("jl0: carrier → off") },
            "-f printed: \(followed.withLock { $0 })")
        // The test's signal mask is inherited: -f must still end on SIGTERM (it unblocks what ends it).
        follower.terminate()
        follower.waitUntilExit()
        #expect(follower.terminationReason == .uncaughtSignal && follower.terminationStatus == SIGTERM)
        pipe.fileHandleForReading.readabilityHandler = nil
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}
