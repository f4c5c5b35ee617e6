import Foundation
import KernelTestSupport
import NetdevSession
import NetdevWire
import Testing
import Udev
import Varlink

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
        /// Appended to this file.
        case file(String)
    }

    init(_ arguments: [String], standardError: StandardError = .null, environment extra: [String: String] = [:]) throws
    {
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
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 2, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
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
        environment.merge(extra) { _, given in given }
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
