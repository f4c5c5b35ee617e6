import Foundation
import Locking
import MobiusCore
import NetdevSession
import Testing

@testable import NetdevDaemon

@Suite("Hook directories, watched")
struct HookDirectoryWatchTests {
    func hook(_ path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8)))
        #expect(chmod(path, 0o755) == 0)
    }

    @Test(
        "a directory that appears, a hook added, chmod-ed or removed: seen at the next run; a parent replaced, which inotify does not tell, within a second",
        .enabled(if: getuid() == 0, "needs root: only hooks owned by root may run"))
    func changes() throws {
        try withTemporaryDirectory("netdevd-watch") { base in
            #expect(chmod(base, 0o755) == 0)
            let directory = base + "/conf/hooks.d"
            let discovery = HookDiscovery(directories: [directory]) { directory, problem in
                Issue.record("\(directory) \(problem)")
            }
            #expect(discovery.hooks().isEmpty)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            #expect(chmod(base + "/conf", 0o755) == 0 && chmod(directory, 0o755) == 0)
            hook(directory + "/10-a")
            #expect(discovery.hooks().map(\.name) == ["10-a"])
            #expect(chmod(directory + "/10-a", 0o757) == 0)
            #expect(discovery.hooks().first?.refusal == "is writable by group or others")
            #expect(chmod(directory + "/10-a", 0o755) == 0)
            #expect(discovery.hooks().first?.refusal == nil)
            #expect(unlink(directory + "/10-a") == 0)
            #expect(discovery.hooks().isEmpty)
            hook(directory + "/20-b")
            #expect(discovery.hooks().map(\.name) == ["20-b"])
            // The parent renamed away and made again: the old directory's watch hears nothing of it.
            #expect(rename(base + "/conf", base + "/conf.old") == 0)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            #expect(chmod(base + "/conf", 0o755) == 0 && chmod(directory, 0o755) == 0)
            hook(directory + "/30-c")
            var seen: [String] = []
            for _ in 0..<30 where seen != ["30-c"] {
                seen = discovery.hooks().map(\.name)
                if seen != ["30-c"] { usleep(50_000) }
            }
            #expect(seen == ["30-c"])
        }
    }

    @Test(
        "the loop is told whether a hook is installed: none, one in an event's directory made meanwhile, a masked name alone (none), a batch hook, none again"
    )
    func presence() throws {
        try withTemporaryDirectory("netdevd-presence") { base in
            let directory = base + "/hooks.d"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let runner = HookRunner(directories: [directory], runner: .inProcess, log: { _ in })
            defer { runner.killAll() }
            let source = HookPresenceSource(runner: runner, queue: DispatchQueue(label: "netdevd-test.presence"))
            let events = Locked<[Event]>([])
            let subscription = source.subscribe { event in events.withLock { $0.append(event) } }
            defer { subscription.dispose() }
            /// Waits up to 5 s for the events told so far to be `expected`.
            func told(_ expected: [Bool]) -> Bool {
                for _ in 0..<500 {
                    if events.withLock({ $0 }) == expected.map(Event.hooksInstalled) { return true }
                    usleep(10_000)
                }
                return false
            }
            #expect(told([false]))
            try FileManager.default.createDirectory(atPath: base + "/link-state.d", withIntermediateDirectories: true)
            hook(base + "/link-state.d/10-a")
            #expect(told([false, true]))
            #expect(unlink(base + "/link-state.d/10-a") == 0)
            #expect(told([false, true, false]))
            #expect(symlink("/dev/null", directory + "/20-masked") == 0)
            source.recheck()
            usleep(300_000)
            #expect(told([false, true, false]), "a masked name is no hook")
            try FileManager.default.createDirectory(atPath: base + "/batch.d", withIntermediateDirectories: true)
            hook(base + "/batch.d/30-b")
            #expect(told([false, true, false, true]))
            #expect(unlink(base + "/batch.d/30-b") == 0)
            #expect(told([false, true, false, true, false]))
        }
    }
}
