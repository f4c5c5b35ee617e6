import Dispatch
import Foundation
import KernelTestSupport
import Locking
import NetdevSession
import Systemd
import Testing

@testable import NetdevDaemon

/// The hook runner as a separate process's protocol: what it refuses, and what happens when either side goes away.
@Suite("Hook runner")
struct HookRunnerProcessTests {
    /// A root-owned hook directory with `hooks` (name, script), for `body`.
    func withHooks(_ hooks: [(String, String)], _ body: (String) throws -> Void) throws {
        try withTemporaryDirectory("netdevd-runner") { directory in
            for (name, script) in hooks {
                #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(script.utf8)))
                #expect(chmod(directory + "/" + name, 0o755) == 0)
            }
            try body(directory)
        }
    }

    /// A service on one end of a socket pair, the other end returned, with the journal entries it makes.
    final class Served: Sendable {
        let client: HookSocket
        let service: HookRunnerService
        let entries = Locked<[String]>([])
        let ended = DispatchSemaphore(value: 0)
        let buffer = HookMessageBuffer()

        init(
            directories: [String],
            credentials: @escaping @Sendable () -> Result<HookCredentials?, HookCredentialsProblem> = { .success(nil) },
            dispatcherDirectories: [String] = []
        ) {
            let (client, server) = HookSocket.pair()!
            self.client = client
            let entries = entries
            let ended = ended
            let queue = DispatchQueue(label: "hook-runner-test")
            let service = HookRunnerService(
                socket: server, directories: directories, credentials: credentials,
                dispatcherDirectories: { dispatcherDirectories }, queue: queue,
                log: { entry in entries.withLock { $0.append(entry.value(of: .message) ?? "") } },
                ended: { ended.signal() })
            self.service = service
            #expect(queue.sync { service.start() })
        }

        func send(_ request: HookRunnerRequest) {
            #expect(client.send(HookRunnerCoding.encode(request)))
        }

        /// The next reply, waiting up to 10 s.
        func reply() -> HookRunnerReply? {
            guard case .message(let bytes) = client.receive(waitingAtMost: 10_000, into: buffer) else { return nil }
            return HookRunnerCoding.decodeReply(bytes)
        }

        /// The end of launch `id`, skipping its start.
        func end(of id: Int) -> HookOutcome? {
            while let reply = reply() {
                if case .ended(id, let outcome, _) = reply { return outcome }
            }
            return nil
        }
    }

    func launch(_ id: Int, _ path: String, environment: [String] = ["NETDEVD_EVENT=link-added"]) -> HookRunnerRequest {
        .start(
            HookLaunch(
                id: id, event: "link-added", path: path, arguments: ["link-added", "t0"], environment: environment,
                timeoutMilliseconds: 5_000, killGraceMilliseconds: 500))
    }

    @Test(
        "the runner starts only installed hooks with NETDEVD_ variables, and says each refused request in the journal")
    func refusals() throws {
        try withHooks([("50-echo", "#!/bin/sh\necho \"$1 $2 $NETDEVD_EVENT $PATH\"\n")]) { directory in
            let served = Served(directories: [directory])
            served.send(launch(1, directory + "/50-echo"))
            let ran = try #require(served.end(of: 1))
            #expect(ran.status == .exited(0))
            #expect(
                ran.outputTail
                    == "link-added t0 link-added /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")

            served.send(launch(2, "/bin/true"))
            let outside = try #require(served.end(of: 2))
            #expect(
                outside.status
                    == .notStarted(
                        "the hook runner refused it: /bin/true, which is not a hook of link-added in "
                            + HookCatalog.directories(for: .linkAdded, hookDirectories: [directory]).joined(
                                separator: ", ")))

            served.send(launch(3, directory + "/50-echo", environment: ["LD_PRELOAD=/tmp/x.so"]))
            let preload = try #require(served.end(of: 3))
            #expect(
                preload.status
                    == .notStarted(
                        "the hook runner refused it: the environment variable LD_PRELOAD, which hooks are never given"))

            served.send(
                launch(
                    4, directory + "/../" + (directory.split(separator: "/").last.map(String.init) ?? "") + "/50-echo"))
            let dotted = try #require(served.end(of: 4))
            guard case .notStarted = dotted.status else {
                Issue.record("a path through '..' ran: \(dotted)")
                return
            }

            // A standard input passed with an ordinary hook's start is refused (only batch hooks read one).
            let passed = open("/dev/null", O_RDONLY)
            #expect(served.client.send(HookRunnerCoding.encode(launch(5, directory + "/50-echo")), passing: passed))
            close(passed)
            #expect(
                served.end(of: 5)?.status
                    == .notStarted(
                        "the hook runner refused it: a standard input passed for a hook of link-added, which gets /dev/null"
                    ))
            let said = served.entries.withLock { $0 }
            #expect(said.contains { $0.hasPrefix("Refused a request from netdevd: /bin/true, which is not a hook of") })
            #expect(said.contains { $0.contains("the environment variable LD_PRELOAD") })
            // A message that is not a request cannot be answered: said, and the connection closed (netdevd then
            // counts what ran as lost and reconnects).
            #expect(served.client.send([1, 0, 0]))
            #expect(served.ended.wait(timeout: .now() + 5) == .success, "the connection stayed open")
            #expect(
                served.entries.withLock { $0 }.last
                    == "Refused a request from netdevd: a message that is not a request; the connection is closed")
        }
    }

    @Test("a message over the limit is said and closes the connection (a start in it could never be answered)")
    func oversized() throws {
        try withHooks([]) { directory in
            let served = Served(directories: [directory])
            #expect(served.client.send([UInt8](repeating: 0x20, count: HookRunnerLimits.maximumMessageBytes + 1)))
            #expect(served.ended.wait(timeout: .now() + 5) == .success, "the connection stayed open")
            #expect(
                served.entries.withLock { $0 }.first?.hasPrefix(
                    "Refused a request from netdevd: a message of 131073 bytes") == true)
            served.client.close()
        }
    }

    @Test(
        "an event's own directory runs for it alone, merged by name with hooks.d; /etc overrides /usr/lib and a mask there hides a hooks.d hook for that event; the runner refuses a hook asked for under another event"
    )
    func perEventDirectories() throws {
        try withTemporaryDirectory("netdevd-events") { root in
            let script = Data("#!/bin/sh\necho \"$(basename $0)\"\n".utf8)
            func put(_ path: String) {
                #expect(FileManager.default.createFile(atPath: root + path, contents: script))
                #expect(chmod(root + path, 0o755) == 0)
            }
            for directory in ["/etc/hooks.d", "/etc/link-state.d", "/lib/hooks.d", "/lib/link-state.d"] {
                try FileManager.default.createDirectory(atPath: root + directory, withIntermediateDirectories: true)
            }
            put("/etc/hooks.d/10-all")
            put("/etc/hooks.d/50-both")
            put("/lib/link-state.d/20-state")
            put("/lib/link-state.d/30-state")
            put("/etc/link-state.d/30-state")
            #expect(symlink("/dev/null", root + "/etc/link-state.d/50-both") == 0)
            let runner = HookRunner(directories: [root + "/etc/hooks.d", root + "/lib/hooks.d"], log: { _ in })
            let state = runner.hooks(for: .linkState)
            #expect(state.map(\.name) == ["10-all", "20-state", "30-state"])
            #expect(state.map(\.path).last == root + "/etc/link-state.d/30-state")
            #expect(runner.hooks(for: .linkAdded).map(\.name) == ["10-all", "50-both"])
            let counts = runner.counts()
            #expect(counts.hooks["link-state"] == 3 && counts.hooks["device-added"] == 2 && counts.refused == 0)

            let served = Served(directories: [root + "/etc/hooks.d", root + "/lib/hooks.d"])
            served.send(launch(1, root + "/lib/link-state.d/20-state"))
            guard case .notStarted(let reason) = served.end(of: 1)?.status else {
                Issue.record("a link-state hook ran for link-added")
                return
            }
            #expect(reason.contains("which is not a hook of link-added"), "\(reason)")
            guard case .start(var asked) = launch(2, root + "/lib/link-state.d/20-state") else { return }
            asked.event = "link-state"
            served.send(.start(asked))
            #expect(served.end(of: 2)?.status == .exited(0))
            served.client.close()
        }
    }

    @Test(
        "batch hooks: a run gets the events since the last as JSON lines on its standard input, each event reaches one run of each batch hook, and a hook that never reads blocks nothing"
    )
    func batchHooks() throws {
        try withTemporaryDirectory("netdevd-batch") { root in
            for directory in ["/hooks.d", "/batch.d", "/out"] {
                try FileManager.default.createDirectory(atPath: root + directory, withIntermediateDirectories: true)
            }
            let scripts = [
                "50-collect":
                    "#!/bin/sh\n[ \"$1 $NETDEVD_EVENT\" = \"batch batch\" ] || exit 9\ncat > \"\(root)/out/$$.$2\"\n",
                "60-ignore": "#!/bin/sh\nexit 3\n",
            ]
            for (name, script) in scripts {
                #expect(FileManager.default.createFile(atPath: root + "/batch.d/" + name, contents: Data(script.utf8)))
                #expect(chmod(root + "/batch.d/" + name, 0o755) == 0)
            }
            let entries = Locked<[String]>([])
            let runner = HookRunner(directories: [root + "/hooks.d"]) { entry in
                entries.withLock { $0.append(entry.value(of: .message) ?? "") }
            }
            defer { runner.killAll() }
            for id in 1...50 {
                let run = HookRun(
                    id: id, subject: .link(index: Int32(id)), event: .linkState, subjectName: "b\(id)",
                    environment: [LogField("NETDEVD_IFNAME", "b\(id)")], link: nil, device: nil,
                    timeoutMilliseconds: 5_000)
                runner.start(run, timeoutMilliseconds: 5_000) { _ in }
            }
            func delivered() -> [[String: Any]] {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []
                return files.flatMap { file in
                    ((try? String(contentsOfFile: root + "/out/" + file, encoding: .utf8)) ?? "")
                        .split(separator: "\n").compactMap {
                            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                        }
                }
            }
            func held() -> Int {
                entries.withLock { $0 }.compactMap { line -> Int? in
                    guard line.hasPrefix("Batch hook 60-ignore exited with status 3; it held ") else { return nil }
                    return Int(line.split(separator: " ")[9])
                }.reduce(0, +)
            }
            #expect(waitUntil(timeout: 10) { delivered().count == 50 && held() == 50 }, "\(entries.withLock { $0 })")
            let names = delivered().compactMap { $0["NETDEVD_IFNAME"] as? String }
            #expect(names.sorted() == (1...50).map { "b\($0)" }.sorted(), "every event exactly once")
            #expect(delivered().allSatisfy { $0["NETDEVD_EVENT"] as? String == "link-state" })
            let runs = (try FileManager.default.contentsOfDirectory(atPath: root + "/out"))
            #expect(runs.count < 50, "one run per event: \(runs.count)")
            // Each run's file is named after its count: the counts add up to the events.
            #expect(runs.compactMap { $0.split(separator: ".").last.flatMap { Int($0) } }.reduce(0, +) == 50)
        }
    }

    @Test("requests and replies survive their encoding; a message cut short, padded or of an unknown kind is none")
    func coding() {
        let requests: [HookRunnerRequest] = [
            launch(7, "/etc/netdevd/hooks.d/ünï", environment: ["NETDEVD_X=a=b", "NETDEVD_EMPTY="]),
            .terminate(id: Int.max), .stopAll,
        ]
        for request in requests {
            let bytes = HookRunnerCoding.encode(request)
            #expect(HookRunnerCoding.decodeRequest(bytes) == request)
            for cut in 0..<bytes.count { #expect(HookRunnerCoding.decodeRequest(Array(bytes[0..<cut])) == nil) }
            #expect(HookRunnerCoding.decodeRequest(bytes + [0]) == nil)
        }
        let replies: [HookRunnerReply] = [
            .started(id: 1, pid: 4242),
            .ended(
                id: 2, outcome: HookOutcome(name: "50-x", status: .killed(signal: 9), durationMilliseconds: 12),
                leftProcesses: true),
            .ended(
                id: 3,
                outcome: HookOutcome(
                    name: "50-y", status: .notStarted("why"), durationMilliseconds: 0, outputTail: "line\nline"),
                leftProcesses: false),
            .ended(
                id: 4, outcome: HookOutcome(name: "z", status: .lost("gone"), durationMilliseconds: 5),
                leftProcesses: false),
            .ended(
                id: 5, outcome: HookOutcome(name: "z", status: .timedOut, durationMilliseconds: 5), leftProcesses: false
            ),
            .ended(
                id: 6, outcome: HookOutcome(name: "z", status: .exited(3), durationMilliseconds: 5),
                leftProcesses: false),
            .stoppedAll,
        ]
        for reply in replies {
            let bytes = HookRunnerCoding.encode(reply)
            #expect(HookRunnerCoding.decodeReply(bytes) == reply)
            for cut in 0..<bytes.count { #expect(HookRunnerCoding.decodeReply(Array(bytes[0..<cut])) == nil) }
            #expect(HookRunnerCoding.decodeReply(bytes + [0]) == nil)
        }
        #expect(HookRunnerCoding.decodeRequest([9]) == nil)
        #expect(HookRunnerCoding.decodeReply([9]) == nil)
    }
}
