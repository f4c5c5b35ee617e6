import Dispatch
import Foundation
import Locking
import NetdevDaemon
import NetdevSession
import Systemd
import Testing

@Suite("Hook supervision")
struct HookSupervisionTests {
    /// Runs `script` as the only hook, once, for a link called `subjectName` with `environment`, and returns its
    /// outcome (waiting up to 10 s); `whileRunning` is called once the run has started, with a question: has the
    /// run ended yet?
    func runOnce(
        _ script: String, subjectName: String, environment: [LogField] = [], timeoutMilliseconds: Int = 5_000,
        target: DispatchQueue? = nil, killGrace: DispatchTimeInterval = .seconds(5),
        whileRunning: (_ ended: @escaping @Sendable () -> Bool) -> Void = { _ in }
    ) throws -> HookOutcome {
        try withTemporaryDirectory("netdevd-supervision") { directory in
            let hook = directory + "/50-hook"
            #expect(FileManager.default.createFile(atPath: hook, contents: Data(script.utf8)))
            #expect(chmod(hook, 0o755) == 0)
            let runner = HookRunner(directories: [directory], killGrace: killGrace, target: target, log: { _ in })
            let result = Locked<HookRunResult?>(nil)
            let run = HookRun(
                id: 1, subject: .link(index: 9), event: .linkAdded, subjectName: subjectName,
                environment: environment, link: nil, device: nil, timeoutMilliseconds: timeoutMilliseconds)
            runner.start(run, timeoutMilliseconds: timeoutMilliseconds) { finished in
                result.withLock { $0 = finished }
            }
            whileRunning { result.withLock { $0 } != nil }
            let deadline = Date().addingTimeInterval(10)
            while result.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
            return try #require(result.withLock { $0 }?.hooks.first)
        }
    }

    @Test("a hook that never stops writing is stopped at its timeout, and its queue's other work goes on meanwhile")
    func endlessOutput() throws {
        // The daemon's arrangement: the hooks' queue targets the loop's.
        let loop = DispatchQueue(label: "hook-supervision-test.loop")
        let outcome = try runOnce(
            "#!/bin/sh\nexec yes\n", subjectName: "chatty0", timeoutMilliseconds: 6_000, target: loop,
            killGrace: .milliseconds(500)
        ) { ended in
            // The loop's queue answers while the hook writes: within half the hook's timeout, with the run still
            // going (a queue held until the hook is stopped answers after 6 s, or once the run has ended).
            let answered = DispatchSemaphore(value: 0)
            let endedFirst = Locked(true)
            loop.async {
                endedFirst.withLock { $0 = ended() }
                answered.signal()
            }
            #expect(
                answered.wait(timeout: .now() + 3) == .success, "the loop's queue did not answer while the hook ran")
            #expect(!endedFirst.withLock { $0 }, "the loop's queue answered only after the hook was stopped")
        }
        #expect(outcome.status == .timedOut)
        #expect(outcome.outputTail.hasSuffix("y"))
        // The cut is said where the output is.
        #expect(outcome.outputTail.hasPrefix("[netdevd kept the last 4096 bytes of this output; the "))
    }

    @Test("a hook gets standard input, output and error, and no descriptor netdevd inherited or opened")
    func onlyStandardDescriptors() throws {
        // A descriptor without close-on-exec, as one inherited from whoever started netdevd would be.
        let inherited = open("/dev/null", O_RDONLY)
        #expect(inherited > 2)
        defer { close(inherited) }
        let outcome = try runOnce("#!/bin/sh\nexec ls /proc/self/fd\n", subjectName: "fds0")
        #expect(outcome.status == .exited(0))
        // ls's own: 0, 1, 2 and the directory it reads (3).
        #expect(outcome.outputTail.split(separator: "\n") == ["0", "1", "2", "3"], "\(outcome.outputTail)")
    }

    @Test("a hook gets its arguments and environment byte for byte: non-ASCII, empty values, '=' in a value")
    func argumentsAndEnvironment() throws {
        let script = "#!/bin/sh\nprintf '[%s]' \"$1\" \"$2\"\necho\nenv | grep '^NETDEVD_T' | sort\n"
        let variables = [
            LogField("NETDEVD_TEMPTY", ""), LogField("NETDEVD_TEQ", "a=b=c"), LogField("NETDEVD_TU", "ünï"),
        ]
        let outcome = try runOnce(script, subjectName: "wé0", environment: variables)
        #expect(outcome.status == .exited(0), "\(outcome.outputTail)")
        let lines = outcome.outputTail.split(separator: "\n")
        #expect(lines == ["[link-added][wé0]", "NETDEVD_TEMPTY=", "NETDEVD_TEQ=a=b=c", "NETDEVD_TU=ünï"])
    }

    @Test("a hook starts in its own process group, reading /dev/null, nothing blocked, the usual signals at default")
    func processSetUp() throws {
        let script =
            "#!/bin/sh\nreadlink /proc/self/fd/0\nexec grep -E '^(Pid|NSpgid|SigBlk|SigIgn):' /proc/self/status\n"
        // What a hook must not inherit from netdevd: an ignored SIGPIPE (netdevd ignores it), blocked signals. Only
        // SIGPIPE: the test process's disposition is shared with the tests running beside this one, and an ignored
        // SIGPIPE only turns their broken-pipe deaths into EPIPE.
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var before = sigaction()
        #expect(sigaction(SIGPIPE, &ignore, &before) == 0)
        defer { sigaction(SIGPIPE, &before, nil) }
        let outcome = try runOnce(script, subjectName: "setup0")
        #expect(outcome.status == .exited(0), "\(outcome.outputTail)")
        let lines = outcome.outputTail.split(separator: "\n").map(String.init)
        #expect(lines.first == "/dev/null")
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        let pid = try #require(fields["Pid"])
        #expect(fields["NSpgid"]?.split(separator: "\t").last.map(String.init) == pid, "a process group of its own")
        #expect(fields["SigBlk"] == "0000000000000000", "no signal blocked")
        let ignored = try #require(fields["SigIgn"].flatMap { UInt64($0, radix: 16) })
        for number in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] {
            #expect(ignored & (1 << UInt64(number - 1)) == 0, "signal \(number) at its default")
        }
    }
}
