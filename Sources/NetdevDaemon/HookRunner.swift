public import Dispatch
import Foundation
public import NetdevSession
import Synchronization
public import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// One hook executable found in the hook directories.
public struct HookFile: Sendable, Equatable {
    /// The file name (the hook's name in the journal).
    public var name: String
    /// The full path.
    public var path: String
    /// Why it must not run (not root's, writable by others, not executable), or `nil` when it may.
    public var refusal: String?
}

/// Runs hook executables: found in `/etc/netdevd/hooks.d` and `/usr/lib/netdevd/hooks.d` (a same-named file in
/// `/etc` overrides, and one that is a symlink to `/dev/null` masks), in lexical order, with posix_spawn and no
/// shell, a clean documented environment, and the event name and subject as arguments.
///
/// Each hook's standard output and error go into a pipe of which only the last ``outputTailBytes`` are kept (a
/// hook that prints gigabytes costs no memory) and are written to the journal under the hook's name. A hook that
/// runs past its timeout gets SIGTERM, then SIGKILL after ``killGrace``; its process group goes with it. Only
/// files owned by root and not writable by group or others run; the others are refused with the reason.
public final class HookRunner: Sendable {
    /// The directories searched, highest priority first.
    public let directories: [String]
    /// How much of a hook's output is kept, from the end.
    public let outputTailBytes = 4096
    /// How long a hook has between SIGTERM and SIGKILL.
    public let killGrace: DispatchTimeInterval
    private let log: @Sendable (JournalEntry) -> Void
    private let cancelled = Mutex<Set<Int>>([])
    private let queue = DispatchQueue(label: "netdevd.hooks", attributes: .concurrent)

    /// A runner over `directories` that hands each hook's output to `log` as a journal entry.
    public init(
        directories: [String] = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"],
        killGrace: DispatchTimeInterval = .seconds(5),
        log: @escaping @Sendable (JournalEntry) -> Void
    ) {
        self.directories = directories
        self.killGrace = killGrace
        self.log = log
    }

    /// The hooks that would run now, in lexical order, with refusals explained.
    public func hooks() -> [HookFile] {
        var chosen: [String: String] = [:]
        for directory in directories.reversed() {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            where !Self.isLeftover(name) {
                chosen[name] = directory + "/" + name
            }
        }
        return chosen.keys.sorted().compactMap { name in
            let path = chosen[name]!
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == "/dev/null" {
                return nil
            }
            return HookFile(name: name, path: path, refusal: Self.refusal(path))
        }
    }

    /// Names that are never hooks: hidden files, editor backups and the copies dpkg and ucf leave beside a
    /// changed file (`50-x.dpkg-old`, `.dpkg-dist`, `.dpkg-new`, `.ucf-dist`, ...), as run-parts skips them.
    static func isLeftover(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix("~") || name.contains(".dpkg-") || name.contains(".ucf-")
            || name.hasSuffix(".rpmnew") || name.hasSuffix(".rpmsave") || name.hasSuffix(".swp")
    }

    static func refusal(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return "cannot be examined: \(String(cString: strerror(errno)))" }
        guard (status.st_mode & S_IFMT) == S_IFREG else { return "is not a regular file" }
        guard status.st_uid == 0 else { return "is owned by uid \(status.st_uid), not root" }
        guard status.st_mode & (S_IWGRP | S_IWOTH) == 0 else { return "is writable by group or others" }
        guard status.st_mode & S_IXUSR != 0 else { return "is not executable" }
        return nil
    }

    /// Runs every hook for `run` on a thread of the runner's, then calls `finished` with the result.
    public func start(
        _ run: HookRun,
        timeoutMilliseconds: Int,
        finished: @escaping @Sendable (HookRunResult) -> Void
    ) {
        queue.async {
            finished(self.execute(run, timeoutMilliseconds: timeoutMilliseconds))
        }
    }

    /// Stops the hooks of these runs (SIGTERM, then SIGKILL); hooks not yet started in them are skipped.
    public func cancel(_ runIDs: [Int]) {
        cancelled.withLock { $0.formUnion(runIDs) }
    }

    func execute(_ run: HookRun, timeoutMilliseconds: Int) -> HookRunResult {
        var outcomes: [HookOutcome] = []
        let environment = Self.environment(for: run)
        for hook in hooks() {
            if cancelled.withLock({ $0.contains(run.id) }) {
                outcomes.append(HookOutcome(name: hook.name, status: .notStarted("cancelled"), durationMilliseconds: 0))
                continue
            }
            if let refusal = hook.refusal {
                outcomes.append(HookOutcome(name: hook.name, status: .notStarted(refusal), durationMilliseconds: 0))
                continue
            }
            let outcome = spawn(hook, run: run, environment: environment, timeoutMilliseconds: timeoutMilliseconds)
            if !outcome.outputTail.isEmpty {
                var entry = JournalEntry(
                    message: outcome.outputTail, priority: outcome.status == .exited(0) ? .info : .warning)
                entry.append(.syslogIdentifier, hook.name)
                entry.append(.normalizing("NETDEVD_HOOK_RUN"), String(run.id))
                entry.append(.normalizing("NETDEVD_HOOK_EVENT"), run.event.rawValue)
                log(entry)
            }
            outcomes.append(outcome)
        }
        cancelled.withLock { _ = $0.remove(run.id) }
        return HookRunResult(runID: run.id, hooks: outcomes)
    }

    /// The clean environment: a fixed PATH, the run's `NETDEVD_*` values and `NETDEVD_JSON`.
    static func environment(for run: HookRun) -> [String] {
        var values = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
        values += run.environment.map { "\($0.name)=\($0.value)" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json: Data? =
            if let link = run.link { try? encoder.encode(LinkDescription(link)) } else if let device = run.device {
                try? encoder.encode(device)
            } else { nil }
        if let json {
            values.append("NETDEVD_JSON=" + String(decoding: json, as: UTF8.self))
        }
        return values
    }

    private func spawn(
        _ hook: HookFile,
        run: HookRun,
        environment: [String],
        timeoutMilliseconds: Int
    ) -> HookOutcome {
        let started = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Int { Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000) }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            return HookOutcome(
                name: hook.name, status: .notStarted("pipe: \(String(cString: strerror(errno)))"),
                durationMilliseconds: 0)
        }
        defer { close(pipeEnds[0]) }
        _ = fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeEnds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        let arguments = [hook.path, run.event.rawValue, run.subjectName]
        var argv = arguments.map { strdup($0) } + [nil]
        var envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, hook.path, &actions, &attributes, &argv, &envp)
        close(pipeEnds[1])
        guard spawned == 0 else {
            return HookOutcome(
                name: hook.name, status: .notStarted(String(cString: strerror(spawned))), durationMilliseconds: 0)
        }
        var tail = OutputTail(limit: outputTailBytes)
        // TimeoutSec=0 disables the timeout, as it does in systemd's units.
        let deadline = timeoutMilliseconds > 0 ? started + UInt64(timeoutMilliseconds) * 1_000_000 : UInt64.max
        var terminatedAt: UInt64?
        var timedOut = false
        var pipeOpen = true
        var status: Int32 = 0
        while true {
            if pipeOpen {
                var poller = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 50) > 0 {
                    pipeOpen = tail.read(from: pipeEnds[0])
                }
            } else {
                usleep(10_000)
            }
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid {
                while pipeOpen && tail.read(from: pipeEnds[0], nonBlocking: true) {}
                break
            }
            let now = DispatchTime.now().uptimeNanoseconds
            let cancelledNow = cancelled.withLock { $0.contains(run.id) }
            if terminatedAt == nil && (now >= deadline || cancelledNow) {
                timedOut = !cancelledNow
                kill(-pid, SIGTERM)
                terminatedAt = now
            } else if let terminatedAt, now >= terminatedAt + graceNanoseconds {
                kill(-pid, SIGKILL)
            }
        }
        let exitStatus: HookExitStatus
        if timedOut {
            exitStatus = .timedOut
        } else if status & 0x7f == 0 {
            exitStatus = .exited((status >> 8) & 0xff)
        } else {
            exitStatus = .killed(signal: status & 0x7f)
        }
        return HookOutcome(name: hook.name, status: exitStatus, durationMilliseconds: elapsed(), outputTail: tail.text)
    }

    private var graceNanoseconds: UInt64 {
        switch killGrace {
        case .seconds(let value): UInt64(value) * 1_000_000_000
        case .milliseconds(let value): UInt64(value) * 1_000_000
        case .microseconds(let value): UInt64(value) * 1_000
        case .nanoseconds(let value): UInt64(value)
        default: 5_000_000_000
        }
    }
}

/// The last `limit` bytes read from a pipe; everything before is read and dropped.
struct OutputTail {
    let limit: Int
    private var bytes: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65536)

    init(limit: Int) {
        self.limit = limit
    }

    /// Reads what is available; returns `false` at end of file or on error.
    mutating func read(from fd: Int32, nonBlocking: Bool = false) -> Bool {
        if nonBlocking {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else { return false }
        }
        let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return count < 0 && errno == EINTR }
        bytes += chunk[0..<count]
        if bytes.count > limit {
            bytes.removeFirst(bytes.count - limit)
        }
        return true
    }

    var text: String {
        String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The `NETDEVD_JSON` of a link: its state, addresses, routes and derived operational state.
struct LinkDescription: Encodable {
    let index: Int32
    let name: String
    let kind: String?
    let macAddress: String?
    let mtu: Int?
    let operationalState: String
    let addresses: [String]
    let defaultRoutes: [DefaultRoute]

    init(_ link: Link) {
        index = link.index
        name = link.name
        kind = link.state.kind
        macAddress = link.state.macAddress
        mtu = link.state.mtu
        operationalState = link.operationalState.rawValue
        addresses = link.addresses.map(\.cidr)
        defaultRoutes = link.defaultRoutes
    }
}
