import Foundation
import KernelTestSupport
import Testing

/// netdevd started the way systemd starts a service: an empty signal mask, default dispositions (the test
/// runner's own children inherit SIGTERM blocked, which would hide what netdevd does with a signal), and standard
/// output and error as `standardError` says.
final class ServiceLikeProcess {
    let pid: pid_t
    private var status: Int32?

    /// What the child gets as standard error.
    enum StandardError {
        /// The journal's stream, as systemd gives it (here: /dev/null).
        case null
        /// A pipe whose read end is already closed: every write fails with EPIPE (and SIGPIPE, unless ignored).
        case brokenPipe
        /// No descriptor 2 at all.
        case closed
    }

    init(_ arguments: [String], standardError: StandardError = .null) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        var ends: [Int32] = [-1, -1]
        switch standardError {
        case .null: posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .brokenPipe:
            #expect(pipe(&ends) == 0)
            // Only the copy on descriptor 2 may reach the child; the read end is closed below.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        case .closed: posix_spawn_file_actions_addclose(&actions, 2)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var argv = arguments.map { strdup($0) } + [nil]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = nil
        var envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, &envp)
        if ends[0] >= 0 {
            close(ends[0])
            close(ends[1])
        }
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        self.pid = pid
    }

    /// Still running (not exited, not killed)?
    var isRunning: Bool {
        reap()
        return status == nil
    }

    /// The raw wait status once it ended, waiting up to `timeout` seconds; `nil` if it is still running.
    func waitStatus(timeout: Double = 10) -> Int32? {
        _ = waitUntil(timeout: timeout) { !isRunning }
        return status
    }

    private func reap() {
        guard status == nil else { return }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
    }
}

/// "exited 0", "killed by signal 15": a wait status in words, so a failed expectation says what happened.
func describe(_ status: Int32?) -> String {
    guard let status else { return "still running" }
    return status & 0x7f == 0 ? "exited \((status >> 8) & 0xff)" : "killed by signal \(status & 0x7f)"
}

@Suite("netdevd on bad days", .serialized, .enabled(if: KernelHarness.isActive, KernelHarness.skipReason))
struct BadDaysKernelTests {
    /// A directory for one test's files, removed at the end.
    func withDirectory(_ body: (String) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "netdevd-baddays-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(directory)
    }

    func arguments(_ directory: String, config: String? = nil, logTarget: String = "journal") -> [String] {
        [
            RunningDaemon.binary, "--config", config ?? directory + "/netdevd.conf", "--hooks-dir",
            directory + "/hooks.d", "--log-target", logTarget, "--socket", directory + "/io.netdevd",
        ]
    }

    @Test("SIGHUP and SIGTERM while the configuration is still being read: netdevd starts, then stops cleanly, exit 0")
    func signalsDuringStartUp() throws {
        try withDirectory { directory in
            // A FIFO as the configuration file holds netdevd in open() until the test writes it.
            let fifo = directory + "/netdevd.conf"
            #expect(mkfifo(fifo, 0o600) == 0)
            let daemon = try ServiceLikeProcess(arguments(directory))
            let blocked = waitUntil(timeout: 10) {
                // openat is system call 257 on x86_64, 56 on aarch64.
                let call = (try? String(contentsOfFile: "/proc/\(daemon.pid)/syscall", encoding: .utf8)) ?? ""
                return call.hasPrefix("257 ") || call.hasPrefix("56 ")
            }
            try #require(blocked, "netdevd never blocked opening its FIFO configuration")
            kill(daemon.pid, SIGHUP)
            kill(daemon.pid, SIGTERM)
            usleep(200_000)
            #expect(daemon.isRunning, "netdevd died of a signal that arrived during start-up")
            // Non-blocking: with no reader left (netdevd killed) this fails with ENXIO instead of waiting forever.
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(
                writer >= 0, "netdevd no longer reads its configuration: \(describe(daemon.waitStatus(timeout: 0)))")
            let text = Array("[Hooks]\nParallelism=2\n".utf8)
            #expect(write(writer, text, text.count) == text.count)
            close(writer)
            let status = daemon.waitStatus()
            #expect(describe(status) == "exited 0")
        }
    }

    @Test("standard error a broken pipe, or closed: netdevd logs (EPIPE, no SIGPIPE), follows links, stops with exit 0")
    func brokenStandardError() throws {
        try withDirectory { directory in
            for standardError in [ServiceLikeProcess.StandardError.brokenPipe, .closed] {
                let daemon = try ServiceLikeProcess(
                    arguments(directory, logTarget: "console"), standardError: standardError)
                // It logs at start and for every link change; each write fails.
                try ip("link", "add", "bp0", "type", "veth", "peer", "name", "bp1")
                try ip("link", "del", "bp0")
                usleep(300_000)
                #expect(daemon.isRunning, "\(standardError): \(describe(daemon.waitStatus(timeout: 0)))")
                if standardError == .closed {
                    let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon.pid)/fd/2")
                    #expect(target == "/dev/null", "descriptor 2 should be /dev/null, not a socket netdevd made")
                }
                kill(daemon.pid, SIGTERM)
                #expect(describe(daemon.waitStatus()) == "exited 0", "\(standardError)")
            }
        }
    }
}
