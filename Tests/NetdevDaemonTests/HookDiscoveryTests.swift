import Dispatch
import Foundation
import Locking
import NetdevDaemon
import NetdevSession
import Systemd
import Testing

/// A fresh directory named after `prefix` for `body`, removed at its end. (A removal that fails leaves scratch files
/// in the temporary directory: nothing a test asserts, so it is not checked.)
func withTemporaryDirectory<Result>(_ prefix: String, _ body: (String) throws -> Result) throws -> Result {
    let directory = NSTemporaryDirectory() + "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try body(directory)
}

@Suite("Hook discovery and NETDEVD_JSON")
struct HookDiscoveryTests {
    /// A fresh directory for one test, removed by `body`'s end.
    func withDirectory(_ body: (String) throws -> Void) throws {
        try withTemporaryDirectory("netdevd-discovery", body)
    }

    func install(_ path: String, mode: Int = 0o755) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8)))
        #expect(chmod(path, mode_t(mode)) == 0)
    }

    /// Sets the directory's modification time to `seconds` since the epoch.
    func setModified(_ directory: String, seconds: Int) {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, directory, &times, 0) == 0)
    }

    @Test("a hook added, removed or masked, and one made writable by others, count from the next run on")
    func changesSeenWithoutReload() throws {
        try withDirectory { directory in
            let runner = HookRunner(directories: [directory], log: { _ in })
            install(directory + "/10-a")
            setModified(directory, seconds: time(nil) - 10)
            #expect(runner.hooks().map(\.name) == ["10-a"])
            #expect(runner.hooks().map(\.name) == ["10-a"])

            install(directory + "/20-b")
            #expect(runner.hooks().map(\.name) == ["10-a", "20-b"])

            #expect(chmod(directory + "/10-a", 0o777) == 0)
            #expect(runner.hooks().first?.refusal == "is writable by group or others")

            #expect(unlink(directory + "/20-b") == 0)
            #expect(symlink("/dev/null", directory + "/20-b") == 0)
            #expect(runner.hooks().map(\.name) == ["10-a"], "a /dev/null symlink masks")
            #expect(unlink(directory + "/10-a") == 0)
            #expect(runner.hooks().map(\.name) == [])
        }
    }

    @Test(
        "a hook whose directory becomes writable by others is refused within a second, without a reload",
        .enabled(if: getuid() == 0, "needs root: only hooks owned by root may run"))
    func directoryChangeSeenWithinASecond() throws {
        try withDirectory { base in
            let directory = base + "/hooks.d"
            #expect(mkdir(directory, 0o755) == 0)
            #expect(chmod(base, 0o755) == 0)
            let runner = HookRunner(directories: [directory], log: { _ in })
            install(directory + "/10-a")
            #expect(runner.hooks().first?.refusal == nil)
            // The hook file is unchanged; the directory above it is what changed. Its examination is reused for
            // at most a second, then made again.
            #expect(chmod(base, 0o777) == 0)
            usleep(1_100_000)
            #expect(runner.hooks().first?.refusal == "is in \(base), which is writable by group or others")
            #expect(chmod(base, 0o755) == 0)
            usleep(1_100_000)
            #expect(runner.hooks().first?.refusal == nil)
        }
    }

    @Test(
        "a symlinked hook whose target changes mode, or that is pointed elsewhere, is examined again at its next run",
        .enabled(if: getuid() == 0, "needs root: only hooks owned by root may run"))
    func symlinkChangesSeenAtTheNextRun() throws {
        try withDirectory { directory in
            try withDirectory { elsewhere in
                let runner = HookRunner(directories: [directory], log: { _ in })
                install(elsewhere + "/real")
                install(elsewhere + "/other", mode: 0o644)
                #expect(symlink(elsewhere + "/real", directory + "/10-a") == 0)
                #expect(runner.hooks().first?.refusal == nil)
                #expect(chmod(elsewhere + "/real", 0o777) == 0)
                #expect(runner.hooks().first?.refusal == "is writable by group or others")
                #expect(chmod(elsewhere + "/real", 0o755) == 0)
                #expect(runner.hooks().first?.refusal == nil)
                #expect(unlink(directory + "/10-a") == 0)
                #expect(symlink(elsewhere + "/other", directory + "/10-a") == 0)
                #expect(runner.hooks().first?.refusal == "is not executable")
                #expect(unlink(directory + "/10-a") == 0)
                #expect(symlink("/dev/null", directory + "/10-a") == 0)
                #expect(runner.hooks().isEmpty, "masked")
            }
        }
    }

    @Test(
        "a hook directory that exists but cannot be read is logged once as an error (its hooks do not run), not skipped"
    )
    func unreadableDirectory() throws {
        try withDirectory { directory in
            let entries = Locked<[String]>([])
            let notADirectory = directory + "/hooks.d"
            #expect(FileManager.default.createFile(atPath: notADirectory, contents: Data()))
            let runner = HookRunner(directories: [notADirectory, directory + "/missing"]) { entry in
                entries.withLock { $0.append(entry.value(of: .message) ?? "") }
            }
            #expect(runner.hooks().isEmpty)
            #expect(runner.hooks().isEmpty)
            #expect(
                entries.withLock { $0 } == [
                    "Hook directory \(notADirectory) is not a directory: its hooks do not run until it can be read"
                ])
            // Readable again: its hooks run, and a later failure is said again.
            try FileManager.default.removeItem(atPath: notADirectory)
            try FileManager.default.createDirectory(atPath: notADirectory, withIntermediateDirectories: false)
            install(notADirectory + "/10-a")
            #expect(runner.hooks().map(\.name) == ["10-a"])
            try FileManager.default.removeItem(atPath: notADirectory)
            #expect(FileManager.default.createFile(atPath: notADirectory, contents: Data()))
            #expect(runner.hooks().isEmpty)
            #expect(entries.withLock { $0.count } == 2)
            if getuid() != 0 {
                try FileManager.default.removeItem(atPath: notADirectory)
                try FileManager.default.createDirectory(atPath: notADirectory, withIntermediateDirectories: false)
                chmod(notADirectory, 0)
                defer { chmod(notADirectory, 0o755) }
                #expect(runner.hooks().isEmpty)
                #expect(entries.withLock { $0.last }?.contains("cannot be listed: Permission denied") == true)
            } else {
                print("HookDiscoveryTests.unreadableDirectory: as root every directory can be listed; EACCES skipped")
            }
        }
    }

    @Test("a file added in the same clock tick as the last listing is not missed")
    func sameTickAddition() throws {
        try withDirectory { directory in
            let runner = HookRunner(directories: [directory], log: { _ in })
            install(directory + "/10-a")
            // The kernel stamps directories with a coarse clock: a listing, then a new file, can leave the same
            // modification time. A listing of a directory changed within the last second is never reused.
            let tick = time(nil)
            setModified(directory, seconds: tick)
            #expect(runner.hooks().map(\.name) == ["10-a"])
            install(directory + "/20-b")
            setModified(directory, seconds: tick)
            #expect(runner.hooks().map(\.name) == ["10-a", "20-b"])
        }
    }

    @Test("a file in the first directory overrides the same name in a later one, and its mask hides it")
    func overrideAndMask() throws {
        try withDirectory { etc in
            try withDirectory { lib in
                install(lib + "/10-a")
                install(lib + "/20-b")
                install(etc + "/10-a", mode: 0o644)
                #expect(symlink("/dev/null", etc + "/20-b") == 0)
                let hooks = HookRunner(directories: [etc, lib], log: { _ in }).hooks()
                #expect(hooks.map(\.path) == [etc + "/10-a"])
                #expect(hooks.first?.refusal == "is not executable")
            }
        }
    }

    @Test(
        "the ownership policy: only root's files, writable by root alone, in directories only root may change",
        .enabled(if: getuid() == 0, "needs root: it gives files and directories to another owner (chown)"))
    func ownershipPolicy() throws {
        try withDirectory { directory in
            try withDirectory { elsewhere in
                let hooks = { HookRunner(directories: [directory], log: { _ in }).hooks() }
                let refusal = { (name: String) in hooks().first { $0.name == name }?.refusal }
                install(directory + "/10-ok")
                #expect(refusal("10-ok") == nil)

                install(directory + "/20-nobody")
                #expect(chown(directory + "/20-nobody", 65534, 65534) == 0)
                #expect(refusal("20-nobody") == "is owned by uid 65534, not root")

                install(directory + "/30-group", mode: 0o775)
                #expect(refusal("30-group") == "is writable by group or others")

                // A symlink runs the file it names: that file's owner, mode and directory count.
                install(elsewhere + "/writable", mode: 0o757)
                #expect(symlink(elsewhere + "/writable", directory + "/40-link-writable") == 0)
                #expect(refusal("40-link-writable") == "is writable by group or others")
                install(elsewhere + "/nobodys")
                #expect(chown(elsewhere + "/nobodys", 65534, 65534) == 0)
                #expect(symlink(elsewhere + "/nobodys", directory + "/41-link-nobody") == 0)
                #expect(refusal("41-link-nobody") == "is owned by uid 65534, not root")
                install(elsewhere + "/fine")
                #expect(symlink(elsewhere + "/fine", directory + "/42-link-fine") == 0)
                #expect(refusal("42-link-fine") == nil)
                #expect(chmod(elsewhere, 0o777) == 0)
                #expect(refusal("42-link-fine") == "is in \(elsewhere), which is writable by group or others")

                // A directory others may write: every hook in it could be replaced by them, so none runs.
                #expect(chmod(directory, 0o777) == 0)
                #expect(refusal("10-ok") == "is in \(directory), which is writable by group or others")
                #expect(chmod(directory, 0o755) == 0)
                #expect(chown(directory, 65534, 65534) == 0)
                #expect(refusal("10-ok") == "is in \(directory), owned by uid 65534, not root")
                #expect(chown(directory, 0, 0) == 0)
                #expect(refusal("10-ok") == nil)
            }
        }
    }

    @Test(
        "a hook reached through a chain of symlinks: every link's directory counts, and symlinks in sticky directories",
        .enabled(if: getuid() == 0, "needs root: it gives a symlink to another owner (lchown)"))
    func symlinkChains() throws {
        try withDirectory { directory in
            try withDirectory { chain in
                try withDirectory { target in
                    // "" when the hook is not listed at all, so that a missing hook never passes for an accepted one.
                    let refusal = { (name: String) -> String? in
                        let hook = HookRunner(directories: [directory], log: { _ in }).hooks().first { $0.name == name }
                        return hook == nil ? "" : hook?.refusal
                    }
                    install(target + "/file")
                    #expect(symlink(target + "/file", chain + "/link") == 0)
                    #expect(symlink("link", chain + "/relative") == 0)
                    #expect(symlink(chain + "/link", directory + "/50-chain") == 0)
                    #expect(symlink(chain + "/relative", directory + "/51-relative") == 0)
                    #expect(refusal("50-chain") == nil)
                    #expect(refusal("51-relative") == nil)
                    // Whoever may write the middle link's directory may point the hook at any root-owned program.
                    #expect(chmod(chain, 0o777) == 0)
                    #expect(refusal("50-chain") == "is in \(chain), which is writable by group or others")
                    #expect(refusal("51-relative") == "is in \(chain), which is writable by group or others")
                    #expect(chmod(chain, 0o755) == 0)

                    // A symlink to a directory, on the way to the file: its directory counts too.
                    #expect(symlink(target, chain + "/directory") == 0)
                    #expect(symlink(chain + "/directory/file", directory + "/60-through") == 0)
                    #expect(refusal("60-through") == nil)
                    #expect(chown(chain, 65534, 65534) == 0)
                    #expect(refusal("60-through") == "is in \(chain), owned by uid 65534, not root")
                    #expect(chown(chain, 0, 0) == 0)

                    // In a sticky directory others may write, only root's entries are root's to change.
                    #expect(chmod(chain, 0o1777) == 0)
                    #expect(refusal("60-through") == nil)
                    #expect(lchown(chain + "/directory", 65534, 65534) == 0)
                    #expect(
                        refusal("60-through")
                            == "is reached through \(chain)/directory, a symlink owned by uid 65534 in a directory "
                            + "others may write")
                    // Sticky but writable by root alone: nobody else can put a link there, whoever owns it.
                    #expect(chmod(chain, 0o1755) == 0)
                    #expect(refusal("60-through") == nil)
                    #expect(chmod(chain, 0o755) == 0)

                    // '..' in a link's text is the parent of the directory the link is in (of a symlinked
                    // directory's target, as the kernel resolves it): the target's directory is what counts.
                    let targetName = String(target.split(separator: "/").last!)
                    #expect(symlink("../\(targetName)/file", chain + "/up") == 0)
                    #expect(symlink(chain + "/up", directory + "/70-dotdot") == 0)
                    #expect(symlink(chain + "/directory/../\(targetName)/file", directory + "/71-physical") == 0)
                    #expect(refusal("70-dotdot") == nil)
                    #expect(refusal("71-physical") == nil)
                    #expect(chmod(target, 0o777) == 0)
                    #expect(refusal("70-dotdot") == "is in \(target), which is writable by group or others")
                    #expect(refusal("71-physical") == "is in \(target), which is writable by group or others")
                    #expect(chmod(target, 0o755) == 0)

                    // A loop of symlinks is refused, with the kernel's reason, and discovery goes on.
                    #expect(symlink(chain + "/loop-b", chain + "/loop-a") == 0)
                    #expect(symlink(chain + "/loop-a", chain + "/loop-b") == 0)
                    #expect(symlink(chain + "/loop-a", directory + "/80-loop") == 0)
                    #expect(refusal("80-loop") == "cannot be examined: \(String(cString: strerror(ELOOP)))")
                    #expect(refusal("50-chain") == nil)
                    #expect(refusal("99-missing") == "")
                }
            }
        }
    }

    /// What `NETDEVD_JSON` was before it was written by hand.
    func encoded<Value: Encodable>(_ value: Value) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The link description as the Codable type it replaced encoded it.
    struct EncodedLink: Encodable {
        let index: Int32
        let name: String
        let kind: String?
        let macAddress: String?
        let mtu: Int?
        let operationalState: String
        let addresses: [String]
        let defaultRoutes: [DefaultRoute]
    }

    @Test("NETDEVD_JSON has the bytes JSONEncoder gives, with awkward names, values and absent fields")
    func jsonMatchesEncoder() throws {
        let names = ["eth0", "we\"ird\\name/x", "tab\there\nnl\r\u{1}\u{1f}\u{8}\u{c}", "ünï", ""]
        for (position, name) in names.enumerated() {
            let full = position % 2 == 0
            let link = Link(
                state: LinkState(
                    index: Int32(position + 1), name: name, kind: full ? "veth" : nil,
                    macAddress: full ? "02:00:00:00:00:01" : nil, mtu: full ? 1500 : nil, isUp: true,
                    hasLowerUp: full, kernelState: full ? .up : .down),
                addresses: full
                    ? [
                        LinkAddress(family: .ipv4, address: "10.0.0.1", prefixLength: 24),
                        LinkAddress(family: .ipv6, address: "fe80::1", prefixLength: 64),
                    ] : [],
                defaultRoutes: full
                    ? [DefaultRoute(family: .ipv4, gateway: "10.0.0.254", metric: 100), DefaultRoute(family: .ipv6)]
                    : [])
            let expected = try encoded(
                EncodedLink(
                    index: link.index, name: link.name, kind: link.state.kind, macAddress: link.state.macAddress,
                    mtu: link.state.mtu, operationalState: link.operationalState.rawValue,
                    addresses: link.addresses.map(\.cidr), defaultRoutes: link.defaultRoutes))
            #expect(HookJSON.describe(link) == expected)

            let device = Device(
                syspath: "/sys/devices/virtual/net/" + name, sysname: name, subsystem: "net",
                devtype: full ? "wlan" : nil, devnode: full ? "/dev/x" : nil, driver: full ? "veth" : nil,
                properties: full ? ["ID_NET_NAME": name, "A\"B": "1", "Z": "", "ä": "x", "a": "y"] : [:])
            #expect(HookJSON.describe(device) == (try encoded(device)))
        }
    }
}
