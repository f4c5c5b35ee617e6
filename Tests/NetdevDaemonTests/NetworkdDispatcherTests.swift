import Dispatch
import Foundation
import KernelTestSupport
import Locking
import NetdevSession
import Testing

@testable import NetdevDaemon

@Suite("networkd-dispatcher scripts, environment and configuration")
struct NetworkdDispatcherTests {
    func script(_ path: String, mode: Int = 0o755) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8)))
        #expect(chmod(path, mode_t(mode)) == 0)
    }

    @Test(
        "netdevd's reused listing follows every change of the state directories: a script added, made unsafe, removed, a directory made",
        .enabled(if: getuid() == 0, "needs root: scripts must be owned by root:root"))
    func listingsFollowChanges() throws {
        try withTemporaryDirectory("netdevd-dispatcher-listings") { root in
            let etc = root + "/etc"
            let lib = root + "/lib"
            try FileManager.default.createDirectory(atPath: etc + "/routable.d", withIntermediateDirectories: true)
            #expect(chmod(etc + "/routable.d", 0o755) == 0)
            let listings = DispatcherScriptListings()
            func scripts() -> [String] { listings.scripts(of: "routable", in: [etc, lib]).scripts }
            #expect(scripts() == [])
            script(etc + "/routable.d/10-a")
            #expect(scripts() == [etc + "/routable.d/10-a"])
            #expect(scripts() == DispatcherScripts.scripts(of: "routable", in: [etc, lib]).scripts)
            #expect(chmod(etc + "/routable.d/10-a", 0o775) == 0)
            #expect(scripts() == [])
            #expect(chmod(etc + "/routable.d/10-a", 0o755) == 0)
            #expect(scripts() == [etc + "/routable.d/10-a"])
            // A directory that did not exist, made: its parent was watched for it.
            try FileManager.default.createDirectory(atPath: lib + "/routable.d", withIntermediateDirectories: true)
            #expect(chmod(lib + "/routable.d", 0o755) == 0)
            script(lib + "/routable.d/20-b")
            #expect(scripts() == [etc + "/routable.d/10-a", lib + "/routable.d/20-b"])
            #expect(unlink(etc + "/routable.d/10-a") == 0)
            #expect(scripts() == [lib + "/routable.d/20-b"])
            #expect(listings.scripts(of: "../routable", in: [etc]) == DispatcherScripts.Listing())
        }
    }

    @Test(
        "scripts are found as networkd-dispatcher finds them: sorted names, first regular file in directory order, mode 755 root:root or the next directory",
        .enabled(if: getuid() == 0, "needs root: scripts must be owned by root:root"))
    func discovery() throws {
        try withTemporaryDirectory("netdevd-dispatcher") { root in
            let etc = root + "/etc"
            let lib = root + "/lib"
            for directory in [etc + "/routable.d", lib + "/routable.d"] {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                #expect(chmod(directory, 0o755) == 0)
            }
            script(etc + "/routable.d/20-b")
            script(etc + "/routable.d/10-a")
            script(lib + "/routable.d/10-a")
            // /dev/null is no regular file: the next directory's runs (networkd-dispatcher does not mask).
            #expect(symlink("/dev/null", etc + "/routable.d/30-c") == 0)
            script(lib + "/routable.d/30-c")
            // Group-writable in /etc: refused there, /usr/lib's runs.
            script(etc + "/routable.d/40-d", mode: 0o775)
            script(lib + "/routable.d/40-d")
            // Mode 700 is not 755 either: refused everywhere.
            script(lib + "/routable.d/50-e", mode: 0o700)
            try FileManager.default.createDirectory(
                atPath: lib + "/routable.d/60-dir", withIntermediateDirectories: true)
            // A symlink to a good script runs under its own name.
            #expect(symlink(lib + "/routable.d/10-a", lib + "/routable.d/70-link") == 0)

            let listing = DispatcherScripts.scripts(of: "routable", in: [etc, lib])
            #expect(
                listing.scripts == [
                    etc + "/routable.d/10-a", etc + "/routable.d/20-b", lib + "/routable.d/30-c",
                    lib + "/routable.d/40-d", lib + "/routable.d/70-link",
                ])
            #expect(listing.refused.map(\.path) == [etc + "/routable.d/40-d", lib + "/routable.d/50-e"])
            #expect(listing.refused.first?.reason.hasPrefix("mode 775, owner 0:0") == true)
            // A state networkd-dispatcher does not know has no directory; neither has a missing one.
            #expect(DispatcherScripts.scripts(of: "../routable", in: [etc]).scripts.isEmpty)
            #expect(DispatcherScripts.scripts(of: "dormant", in: [etc, lib]) == DispatcherScripts.Listing())
            // A state directory that is a file, or a symlink loop: said, and the other directories still run.
            #expect(FileManager.default.createFile(atPath: etc + "/carrier.d", contents: Data()))
            try FileManager.default.createDirectory(atPath: lib + "/carrier.d", withIntermediateDirectories: true)
            #expect(chmod(lib + "/carrier.d", 0o755) == 0)
            script(lib + "/carrier.d/10-a")
            #expect(symlink(root + "/loop", root + "/loop") == 0)
            let odd = DispatcherScripts.scripts(of: "carrier", in: [etc, root + "/loop", lib])
            #expect(odd.scripts == [lib + "/carrier.d/10-a"])
            #expect(
                odd.refused.map(\.reason) == [
                    "cannot be listed: Not a directory", "cannot be listed: Too many levels of symbolic links",
                ])
            // The directory itself must be mode 755.
            #expect(chmod(etc + "/routable.d", 0o775) == 0)
            #expect(DispatcherScripts.scripts(of: "routable", in: [etc]).scripts.isEmpty)
            #expect(DispatcherScripts.scripts(of: "routable", in: [etc]).refused.first?.path == etc + "/routable.d")
        }
    }

    @Test(
        "the environment holds networkd-dispatcher's variables, addresses in networkctl's order, json as Python writes it"
    )
    func environment() {
        let link = Link(
            state: LinkState(
                index: 4, name: "eth0", kind: "veth", macAddress: "8e:7f:b3:66:47:c3", isUp: true, hasLowerUp: true,
                isLoopback: false, kernelState: .up),
            addresses: [
                LinkAddress(family: .ipv6, address: "fe80::1", prefixLength: 64, scope: 253),
                LinkAddress(family: .ipv6, address: "2001:db8::5", prefixLength: 64),
                LinkAddress(family: .ipv4, address: "192.0.2.5", prefixLength: 24),
                LinkAddress(family: .ipv4, address: "127.0.0.2", prefixLength: 8, scope: 254),
            ],
            defaultRoutes: [DefaultRoute(family: .ipv4, gateway: "192.0.2.1")])
        let run = DispatcherRun(
            id: 1, state: "routable", link: link, administrativeState: "configured", operationalState: "routable",
            directories: ["/etc/networkd-dispatcher"])
        #expect(
            DispatcherEnvironment.variables(for: run) == [
                "ADDR=192.0.2.5", "ESSID=", "IP_ADDRS=192.0.2.5", "IP6_ADDRS=2001:db8::5", "IFACE=eth0",
                "STATE=routable", "AdministrativeState=configured", "OperationalState=routable",
                "json={\"Address\": [\"192.0.2.5\", \"127.0.0.2\", \"2001:db8::5\", \"fe80::1\"], "
                    + "\"AdministrativeState\": \"configured\", \"Gateway\": [\"192.0.2.1\"], "
                    + "\"Hardware Address\": [\"8e:7f:b3:66:47:c3\"], \"InterfaceName\": \"eth0\", \"Kind\": [\"veth\"], "
                    + "\"OperationalState\": \"routable\", \"State\": \"routable (configured)\", \"Type\": \"ether\"}",
            ])
        var gone = run
        gone.state = "linger"
        gone.linkIsGone = true
        #expect(
            DispatcherEnvironment.variables(for: gone).last
                == "json={\"AdministrativeState\": \"configured\", \"InterfaceName\": \"eth0\", "
                + "\"OperationalState\": \"routable\", \"State\": \"routable (configured)\", \"Type\": \"ether\"}")
        #expect(DispatcherEnvironment.variables(for: gone).first == "ADDR=")
        // Ties broken as networkctl breaks them: by the address's bytes (192.0.2.9 before 192.0.2.10); gateways
        // IPv4 first, then by metric.
        let tied = Link(
            state: link.state,
            addresses: [
                LinkAddress(family: .ipv4, address: "192.0.2.10", prefixLength: 24),
                LinkAddress(family: .ipv4, address: "192.0.2.9", prefixLength: 24),
            ],
            defaultRoutes: [
                DefaultRoute(family: .ipv6, gateway: "fe80::1", metric: 1),
                DefaultRoute(family: .ipv4, gateway: "192.0.2.254", metric: 200),
                DefaultRoute(family: .ipv4, gateway: "192.0.2.1", metric: 100),
            ])
        #expect(DispatcherEnvironment.listed(tied.addresses).map(\.address) == ["192.0.2.9", "192.0.2.10"])
        #expect(DispatcherEnvironment.gateways(of: tied) == ["192.0.2.1", "192.0.2.254", "fe80::1"])
        #expect(DispatcherEnvironment.quoted("é\"\\\n😀") == "\"\\u00e9\\\"\\\\\\n\\ud83d\\ude00\"")
    }

    @Test(
        "[Hooks] NetworkdDispatcherDirectory= is repeatable, in order, emptied by an empty value; a relative path is a warning"
    )
    func configuration() {
        let text = """
            [Hooks]
            NetworkdDispatcherDirectory=/old
            NetworkdDispatcherDirectory=
            NetworkdDispatcherDirectory=/etc/networkd-dispatcher/
            NetworkdDispatcherDirectory=/usr/lib/networkd-dispatcher
            NetworkdDispatcherDirectory=/etc/networkd-dispatcher
            NetworkdDispatcherDirectory=networkd-dispatcher
            """
        guard case .loaded(let configuration, let warnings) = ConfigurationLoader.parse(text, file: "f") else {
            Issue.record("expected the file to load")
            return
        }
        #expect(
            configuration.networkdDispatcherDirectories == ["/etc/networkd-dispatcher", "/usr/lib/networkd-dispatcher"])
        #expect(
            warnings.map(\.description) == [
                "f:7: NetworkdDispatcherDirectory='networkd-dispatcher' must be an absolute path without '.' or '..', "
                    + "such as /etc/networkd-dispatcher; the line is ignored"
            ])
        #expect(Configuration().networkdDispatcherDirectories.isEmpty)
    }

    @Test(
        "the hook runner starts a networkd-dispatcher script of its own directories only, without arguments, with networkd-dispatcher's variables only",
        .enabled(if: getuid() == 0, "needs root: scripts must be owned by root:root"))
    func runner() throws {
        try withTemporaryDirectory("netdevd-dispatcher-runner") { root in
            try FileManager.default.createDirectory(atPath: root + "/routable.d", withIntermediateDirectories: true)
            #expect(chmod(root + "/routable.d", 0o755) == 0)
            let path = root + "/routable.d/50-echo"
            #expect(
                FileManager.default.createFile(
                    atPath: path, contents: Data("#!/bin/sh\necho \"$# $IFACE $STATE $NETDEVD_EVENT\"\n".utf8)))
            #expect(chmod(path, 0o755) == 0)
            let served = HookRunnerProcessTests.Served(directories: [], dispatcherDirectories: [root])
            func start(_ id: Int, _ event: String, _ path: String, _ environment: [String]) -> HookOutcome? {
                served.send(
                    .start(
                        HookLaunch(
                            id: id, event: event, path: path, arguments: [], environment: environment,
                            timeoutMilliseconds: 5_000, killGraceMilliseconds: 500)))
                return served.end(of: id)
            }
            let ran = start(1, "networkd-dispatcher/routable", path, ["IFACE=eth0", "STATE=routable"])
            #expect(ran?.status == .exited(0))
            #expect(ran?.outputTail == "0 eth0 routable")
            // Another state's directory, a hook variable, an unknown state: refused.
            let carrier = start(2, "networkd-dispatcher/carrier", path, ["IFACE=eth0"])
            #expect(
                carrier?.status
                    == .notStarted(
                        "the hook runner refused it: \(path), which is not a hook of networkd-dispatcher/carrier in "
                            + root + "/carrier.d"))
            let variable = start(3, "networkd-dispatcher/routable", path, ["NETDEVD_EVENT=x"])
            #expect(
                variable?.status
                    == .notStarted(
                        "the hook runner refused it: the environment variable NETDEVD_EVENT, which hooks are never given"
                    ))
            let outside = start(5, "networkd-dispatcher/routable", "/bin/sh", [])
            #expect(
                outside?.status
                    == .notStarted(
                        "the hook runner refused it: /bin/sh, which is not a hook of networkd-dispatcher/routable in "
                            + root + "/routable.d"))
            served.send(
                .start(
                    HookLaunch(
                        id: 6, event: "networkd-dispatcher/routable", path: path, arguments: ["-c", "id"],
                        environment: [], timeoutMilliseconds: 5_000, killGraceMilliseconds: 500)))
            #expect(
                served.end(of: 6)?.status
                    == .notStarted(
                        "the hook runner refused it: arguments for a networkd-dispatcher script, which gets none"))
            let unknown = start(4, "networkd-dispatcher/../routable.d", path, [])
            guard case .notStarted = unknown?.status else {
                Issue.record("a script ran for an unknown state: \(String(describing: unknown))")
                return
            }
        }
    }
}

@Suite("networkd-dispatcher runs, executed")
struct NetworkdDispatcherExecutorTests {
    @Test(
        "each link's runs go in the order made, one at a time, with up to Parallelism links at once; none is dropped",
        .enabled(if: getuid() == 0, "needs root: scripts must be owned by root:root"))
    func order() throws {
        try withTemporaryDirectory("netdevd-dispatcher-order") { root in
            #expect(chmod(root, 0o755) == 0)
            let states = ["off", "no-carrier", "carrier", "degraded", "routable"]
            let log = root + "/runs.log"
            for state in states {
                try FileManager.default.createDirectory(atPath: root + "/\(state).d", withIntermediateDirectories: true)
                #expect(chmod(root + "/\(state).d", 0o755) == 0)
                let script = root + "/\(state).d/50-log"
                #expect(
                    FileManager.default.createFile(
                        atPath: script, contents: Data("#!/bin/sh\necho \"$IFACE $STATE\" >> \(log)\n".utf8)))
                #expect(chmod(script, 0o755) == 0)
            }
            let runner = HookRunner(directories: [root + "/hooks.d"], runner: .inProcess, log: { _ in })
            let dispatcher = NetworkdDispatcher(runner: runner)
            var id = 0
            for state in states {
                for index in Int32(2)...6 {
                    id += 1
                    let link = Link(
                        state: LinkState(
                            index: index, name: "veth\(index)", isUp: true, hasLowerUp: true, isLoopback: false,
                            kernelState: .up))
                    dispatcher.dispatch(
                        DispatcherRun(
                            id: id, state: state, link: link, administrativeState: "unmanaged", operationalState: state,
                            directories: [root], parallelism: 2))
                }
            }
            // The log does not exist until the first script ran: read as empty until then.
            func lines() -> [Substring] {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            }
            #expect(waitUntil(timeout: 10) { lines().count >= 25 })
            let lines = lines()
            #expect(lines.count == 25)
            for index in 2...6 {
                let ran = lines.filter { $0.hasPrefix("veth\(index) ") }.map { String($0.split(separator: " ")[1]) }
                #expect(ran == states, "veth\(index) ran \(ran)")
            }
            runner.killAll()
        }
    }
}

@Suite("networkd's state files, watched")
struct NetworkdStateWatcherTests {
    /// Waits up to 5 s for `condition` over the events seen so far.
    func wait(_ events: Locked<[Event]>, _ condition: ([Event]) -> Bool) -> Bool {
        for _ in 0..<500 {
            if events.withLock({ condition($0) }) { return true }
            usleep(10_000)
        }
        return false
    }

    @Test(
        "networkd's directory appearing, its state file, link files written by rename and removed: each reported, nothing more"
    )
    func follows() throws {
        try withTemporaryDirectory("netdevd-netif") { base in
            let root = base + "/systemd/netif"
            let events = Locked<[Event]>([])
            let queue = DispatchQueue(label: "netif-test")
            let watcher = NetworkdStateWatcher(
                root: root, queue: queue, problem: { Issue.record("problem: \($0)") },
                send: { event in events.withLock { $0.append(event) } })
            queue.sync { watcher.start() }
            defer { queue.sync { watcher.stop() } }
            #expect(events.withLock { $0 } == [.networkdStatesRead(running: false, administrative: [:])])

            // tmpfiles makes the directories at boot, networkd or not: not running yet.
            try FileManager.default.createDirectory(atPath: root + "/links", withIntermediateDirectories: true)
            #expect(wait(events) { $0.count >= 2 })
            #expect(events.withLock { $0.last } == .networkdStatesRead(running: false, administrative: [:]))
            // networkd writes its state, then a link's file, as it does: a temporary file renamed into place.
            let count = events.withLock { $0.count }
            #expect(FileManager.default.createFile(atPath: root + "/.#state1", contents: Data("OPER_STATE=off\n".utf8)))
            #expect(rename(root + "/.#state1", root + "/state") == 0)
            // Waits for the state file's report itself: making the three directories may be reported more than once
            // (each as it appears), and such a report can come after `count` was read.
            let running = Event.networkdStatesRead(running: true, administrative: [:])
            #expect(wait(events) { $0.dropFirst(count).contains(running) })
            #expect(events.withLock { $0.last } == running)
            #expect(
                FileManager.default.createFile(
                    atPath: root + "/links/.#3abc", contents: Data("ADMIN_STATE=configured\nOPER_STATE=routable\n".utf8)
                ))
            #expect(rename(root + "/links/.#3abc", root + "/links/3") == 0)
            #expect(wait(events) { $0.last == .networkdStateChanged(index: 3, administrative: "configured") })
            // The state file rewritten (networkd does at every change) is not reported again.
            let settled = events.withLock { $0.count }
            #expect(
                FileManager.default.createFile(atPath: root + "/.#state2", contents: Data("OPER_STATE=routable\n".utf8))
            )
            #expect(rename(root + "/.#state2", root + "/state") == 0)
            #expect(unlink(root + "/links/3") == 0)
            #expect(wait(events) { $0.last == .networkdStateChanged(index: 3, administrative: nil) })
            usleep(200_000)
            #expect(events.withLock { $0.count } == settled + 1)
        }
    }
}
