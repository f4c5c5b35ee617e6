import Dispatch
import Foundation
import KernelTestSupport
import Locking
import NetdevSession
import Systemd
import Testing

@testable import NetdevDaemon

extension HookRunnerProcessTests {
    @Test("a hook file that is not root's, or writable by others, is refused by the runner itself")
    func ownershipCheckedByRunner() throws {
        try withHooks([("50-open", "#!/bin/sh\ntrue\n")]) { directory in
            #expect(chmod(directory + "/50-open", 0o777) == 0)
            let served = Served(directories: [directory])
            served.send(launch(1, directory + "/50-open"))
            let outcome = try #require(served.end(of: 1))
            guard case .notStarted(let reason) = outcome.status else {
                Issue.record("a hook writable by others ran: \(outcome)")
                return
            }
            #expect(reason.contains("writable"), "\(reason)")
            served.client.close()
        }
    }

    @Test("when netdevd's end closes, the runner stops its running hooks and ends")
    func netdevdGone() throws {
        try withHooks([("50-sleep", "#!/bin/sh\necho $$ > \"$0.pid\"\nexec sleep 300\n")]) { directory in
            let served = Served(directories: [directory])
            served.send(launch(1, directory + "/50-sleep"))
            guard case .started(1, let pid) = served.reply() else {
                Issue.record("no start")
                return
            }
            #expect(kill(pid, 0) == 0)
            served.client.close()
            #expect(served.ended.wait(timeout: .now() + 5) == .success, "the runner did not end")
            #expect(kill(pid, 0) != 0, "the hook outlived the connection")
        }
    }

    @Test("a configuration the runner cannot read refuses hooks with the reason, until it can be read again")
    func unreadableConfiguration() throws {
        try withHooks([("50-echo", "#!/bin/sh\necho ran\n")]) { directory in
            let readable = Locked(false)
            let served = Served(directories: [directory]) {
                readable.withLock { $0 }
                    ? .success(nil) : .failure(HookCredentialsProblem("the configuration cannot be read"))
            }
            served.send(launch(1, directory + "/50-echo"))
            #expect(served.end(of: 1)?.status == .notStarted("the configuration cannot be read"))
            readable.withLock { $0 = true }
            served.send(launch(2, directory + "/50-echo"))
            #expect(served.end(of: 2)?.status == .exited(0))
            served.client.close()
        }
    }

    @Test("User= and Group=: resolved by name and number; unknown ones are refused with a reason")
    func credentials() throws {
        let nobody = try #require(try HookCredentials.resolve(user: "nobody", group: nil).get())
        #expect(nobody.uid == 65534)
        #expect(try HookCredentials.resolve(user: "0", group: "65534").get()?.gid == 65534)
        #expect(try HookCredentials.resolve(user: nil, group: nil).get() == nil)
        #expect(throws: HookCredentialsProblem("User=no-such-user-here: no such user")) {
            try HookCredentials.resolve(user: "no-such-user-here", group: nil).get()
        }
    }

    @Test(
        "hooks run as [Hooks] User= (the runner netdevd starts as its child); a runner that dies: its running hook is lost, said once, and the next run reaches a new runner",
        .tags(.kernel), KernelHarness.enabled)
    func childRunner() throws {
        let script =
            "#!/bin/sh\necho \"uid=$(id -u) gid=$(id -g) runner=$PPID\"\n"
            + "[ \"$2\" = slow0 ] && { echo $$ > /tmp/netdevd-runner-test.pid; exec sleep 300; }\nexit 0\n"
        try withHooks([("50-id", script), ("60-after", "#!/bin/sh\necho after\n")]) { directory in
            // Beside the hook directory, not in it (every file in it is a hook).
            let config = directory + ".conf"
            #expect(FileManager.default.createFile(atPath: config, contents: Data("[Hooks]\nUser=nobody\n".utf8)))
            defer { unlink(config) }
            let entries = Locked<[String]>([])
            let runner = HookRunner(
                directories: [directory],
                runner: .child(
                    executable: RunningDaemon.binary,
                    arguments: [
                        "--serve-hooks", "--config", config, "--hooks-dir", directory, "--log-target", "console",
                    ]),
                log: { entry in entries.withLock { $0.append(entry.value(of: .message) ?? "") } })
            defer { runner.killAll() }
            func run(_ id: Int, _ name: String) -> Locked<HookRunResult?> {
                let result = Locked<HookRunResult?>(nil)
                let hookRun = HookRun(
                    id: id, subject: .link(index: Int32(id)), event: .linkState, subjectName: name, environment: [],
                    link: nil, device: nil, timeoutMilliseconds: 30_000)
                runner.start(hookRun, timeoutMilliseconds: 30_000) { finished in result.withLock { $0 = finished } }
                return result
            }
            let first = run(1, "quick0")
            #expect(waitUntil(timeout: 10) { first.withLock { $0 } != nil })
            let outcome = try #require(first.withLock { $0 }?.hooks.first)
            #expect(outcome.status == .exited(0))
            #expect(outcome.outputTail.hasPrefix("uid=65534 gid=65534 runner="), "\(outcome.outputTail)")
            let runnerPID = try #require(outcome.outputTail.split(separator: "=").last.flatMap { Int32($0) })

            let pidFile = "/tmp/netdevd-runner-test.pid"
            unlink(pidFile)
            let slow = run(2, "slow0")
            #expect(waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: pidFile) })
            // The hook's process group outlives a runner killed with SIGKILL (under systemd, the unit's cgroup goes
            // with it): ended here.
            defer {
                if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                    let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
                {
                    kill(-pid, SIGKILL)
                }
                unlink(pidFile)
            }
            #expect(kill(runnerPID, SIGKILL) == 0)
            #expect(waitUntil(timeout: 10) { slow.withLock { $0 } != nil })
            let lost = try #require(slow.withLock { $0 }?.hooks.first)
            #expect(lost.status == .lost("the hook runner went away while it ran"))
            // The run goes on with its next hook, through a new runner started before the dead one is reaped; the
            // dead one is reaped all the same (a zombie would still take signal 0).
            #expect(slow.withLock { $0 }?.hooks.last?.status == .exited(0))
            #expect(waitUntil(timeout: 10) { kill(runnerPID, 0) != 0 }, "the killed runner was not reaped")
            #expect(
                entries.withLock { $0 }.filter { $0.hasPrefix("The hook runner went away") }
                    == [
                        "The hook runner went away (it closed its end); 1 running hook counted as failed; the next hook run starts it again"
                    ])

            let again = run(3, "quick0")
            #expect(waitUntil(timeout: 10) { again.withLock { $0 } != nil })
            let next = try #require(again.withLock { $0 }?.hooks.first)
            #expect(next.status == .exited(0))
            #expect(!next.outputTail.hasSuffix("runner=\(runnerPID)"), "the same runner answered")
        }
    }
}
