import Foundation
import KernelTestSupport
import NetdevSession
import NetdevWire
import Testing
import Udev
import Varlink

extension BadDaysKernelTests {
    @Test("a service manager that reads no notification: netdevd goes on, says so once, and SIGTERM ends it, exit 0")
    func notifySocketStuck() throws {
        try withDirectory { directory in
            // The manager's socket, never read: its queue fills with watchdog pings (every 25 ms), and sd_notify(3)
            // would then block netdevd's notifications, and its stop, which waits for them, for good.
            let manager = try NotifySocket()
            let errors = directory + "/stderr"
            let daemon = try ServiceLikeProcess(
                arguments(directory, logTarget: "console"), standardError: .file(errors),
                environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "50000"])
            let socket = ["--socket", directory + "/io.netdevd"]
            #expect(waitUntil(timeout: 10) { (try? netdevctl(["links"] + socket).status) == 0 })
            #expect(
                waitUntil(timeout: 15) {
                    ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").contains("took no notification")
                })
            try ipBatch(["link add ns0a type veth peer name ns0b"])
            defer { _ = try? ipBatch(["link del ns0a"]) }
            #expect(
                waitUntil(timeout: 10) {
                    (try? netdevctl(["links", "ns0a"] + socket))?.output.contains("ns0a") == true
                })
            kill(daemon.pid, SIGTERM)
            #expect(describe(daemon.waitStatus(timeout: 15)) == "exited 0")
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.components(separatedBy: "took no notification").count == 2, "\(said)")
            withExtendedLifetime(manager) {}
        }
    }

    @Test("--record into a pipe nobody reads: netdevd goes on, and SIGTERM still ends it (exit 0) with the loss said")
    func recordToStuckPipe() throws {
        try withDirectory { directory in
            let fifo = directory + "/record.fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            // A reader that never reads: netdevd's open succeeds, its writes block once the pipe holds 64 KiB.
            let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            defer { close(reader) }
            let errors = directory + "/stderr"
            let daemon = try ServiceLikeProcess(
                arguments(directory) + ["--record", fifo], standardError: .file(errors))
            let socket = ["--socket", directory + "/io.netdevd"]
            #expect(waitUntil(timeout: 10) { (try? netdevctl(["links"] + socket).status) == 0 })
            try ipBatch((0..<200).map { "link add rp\($0)a type veth peer name rp\($0)b" })
            try ipBatch((0..<200).map { "link del rp\($0)a" })
            #expect(
                waitUntil(timeout: 10) { (try? netdevctl(["links", "rp*"] + socket))?.output.contains("rp") == false })
            kill(daemon.pid, SIGTERM)
            #expect(describe(daemon.waitStatus(timeout: 15)) == "exited 0")
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.contains("bytes not written: the file took nothing for 5 s"), "\(said)")
        }
    }

    @Test("--record onto a full file system: recording stops with the reason said, netdevd goes on")
    func recordToFullDisk() throws {
        try withDirectory { directory in
            let small = directory + "/small"
            try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
            try run("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small)
            defer { _ = try? run("umount", small) }
            let errors = directory + "/stderr"
            let daemon = try ServiceLikeProcess(
                arguments(directory) + ["--record", small + "/events.jsonl"], standardError: .file(errors))
            let socket = ["--socket", directory + "/io.netdevd"]
            #expect(waitUntil(timeout: 10) { (try? netdevctl(["links"] + socket).status) == 0 })
            try ipBatch((0..<100).map { "link add fd\($0)a type veth peer name fd\($0)b" })
            defer { _ = try? ipBatch((0..<100).map { "link del fd\($0)a" }) }
            let listed = waitUntil(timeout: 10) {
                (try? netdevctl(["links", "fd*", "--no-legend"] + socket))?.output.split(separator: "\n").count == 200
            }
            #expect(listed)
            let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(said.contains("recording stopped: No space left on device"), "\(said)")
            kill(daemon.pid, SIGTERM)
            #expect(describe(daemon.waitStatus()) == "exited 0")
        }
    }

    @Test(
        "a reload with each kind of bad value: netdevd stays up, the old configuration stays, file:line in the journal")
    func reloadWithBadValues() throws {
        let daemon = try RunningDaemon(configuration: "[Hooks]\r\nParallelism=2\r\n")
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let dropIns = daemon.directory + "/netdevd.conf.d"
        // A line not understood is a warning (the line ignored, the reload done); a file that cannot be read at all
        // keeps the previous configuration.
        let cases: [(name: String, content: String?, line: Int, says: String, rejected: Bool)] = [
            ("10-span.conf", "[Hooks]\nTimeoutSec=1e300\n", 2, "TimeoutSec='1e300' is not a time span", false),
            ("10-huge.conf", "[Hooks]\nTimeoutSec=99999999999h\n", 2, "is longer than 365 days", false),
            ("10-debounce.conf", "[Hooks]\nDebounceSec=infinity\n", 2, "DebounceSec= cannot be infinity", false),
            ("10-range.conf", "\u{FEFF}[Hooks]\r\nParallelism=65\r\n", 2, "Parallelism='65' must be a number", false),
            ("10-state.conf", "[Online]\nMinimumOperationalState=fast\n", 2, "MinimumOperationalState='fast'", false),
            ("10-key.conf", "[Online]\nRequiredInterface=eth0\n", 2, "did you mean 'RequiredInterfaces'?", false),
            ("10-big.conf", String(repeating: "#\n", count: 600_000), 0, "is larger than 1 MiB", true),
            ("10-dir.conf", nil, 0, "cannot be read: Is a directory", true),
        ]
        var (warned, rejected) = (0, 0)
        for bad in cases {
            let path = dropIns + "/" + bad.name
            if let content = bad.content {
                try content.write(toFile: path, atomically: true, encoding: .utf8)
            } else {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            }
            daemon.signal(SIGHUP)
            #expect(daemon.notify.receive(until: "RELOADING=1") != nil, "\(bad.name)")
            #expect(daemon.notify.receive(until: "READY=1") != nil, "\(bad.name)")
            let kind = bad.rejected ? MessageKind.reloadFailed : .configurationWarning
            let seen = bad.rejected ? rejected : warned
            let entries = try journal(of: daemon, "MESSAGE_ID", kind.id) { $0.count > seen }
            let entry = try #require(entries.last, "nothing logged for \(bad.name)")
            #expect(entries.count == seen + 1, "\(bad.name): \(entries.count - seen) entries")
            #expect(entry["NETDEVD_CONFIG_FILE"] as? String == path)
            #expect(entry["NETDEVD_CONFIG_LINE"] as? String == String(bad.line), "\(bad.name)")
            let message = entry["MESSAGE"] as? String ?? ""
            if bad.rejected {
                #expect(message.hasPrefix("Configuration not reloaded, the previous one stays in force: "))
                rejected += 1
            } else {
                #expect(message.hasSuffix("; the line is ignored"), "\(message)")
                warned += 1
            }
            #expect(message.contains(bad.says), "\(message)")
            try FileManager.default.removeItem(atPath: path)
        }
        // The CRLF main file with nothing else reloads cleanly, and netdevd stops as usual.
        daemon.signal(SIGHUP)
        #expect(daemon.notify.receive(until: "READY=1") != nil)
        let failures = try journal(of: daemon, "MESSAGE_ID", MessageKind.reloadFailed.id) { _ in true }
        #expect(failures.count == rejected)
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }
}
