import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

/// netdevd as a child process in the harness: NOTIFY_SOCKET bound by the test, logging to the private journald,
/// hooks from a directory of the test's.
final class RunningDaemon {
    let process = Process()
    let notify: NotifySocket
    let directory: String

    static var binary: String { built("netdevd") }

    /// The path of an executable `swift build` made.
    static func built(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/\(name)").path
    }

    var socket: String { directory + "/io.netdevd" }

    init(
        hook: String? = nil,
        configuration: String? = nil,
        extraArguments: [String] = [],
        environment extra: [String: String] = [:]
    ) throws {
        directory = NSTemporaryDirectory() + "netdevd-daemon-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: directory + "/netdevd.conf.d", withIntermediateDirectories: true)
        if let hook {
            let path = directory + "/hooks.d/50-record"
            try hook.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
        }
        if let configuration {
            try configuration.write(toFile: directory + "/netdevd.conf", atomically: true, encoding: .utf8)
        }
        notify = try NotifySocket()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments =
            [
                "--config", directory + "/netdevd.conf", "--hooks-dir", directory + "/hooks.d",
                "--log-target", "journal", "--socket", directory + "/io.netdevd",
            ] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        environment.merge(extra) { _, new in new }
        process.environment = environment
        try process.run()
    }

    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for the exit, reading notifications meanwhile as systemd would; returns the status, or `nil` after
    /// `timeout` seconds.
    func exitStatus(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { _ = notify.receive(timeout: 0.01) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Journal entries of `daemon` whose `field` is `value`, polled until `condition` holds on them.
func journal(
    of daemon: RunningDaemon,
    _ field: String,
    _ value: String,
    until condition: ([[String: Any]]) -> Bool
) throws -> [[String: Any]] {
    var entries: [[String: Any]] = []
    let pid = "_PID=\(daemon.process.processIdentifier)"
    _ = try waitUntil(timeout: 10) {
        entries = try jsonObjects(run("journalctl", "--no-pager", "--all", "-o", "json", "\(field)=\(value)", pid))
        return condition(entries)
    }
    return entries
}

/// The daemon's peak resident memory in KiB (VmHWM).
func peakMemoryKiB(_ pid: Int32) -> Int? {
    memoryKiB(pid, "VmHWM:")
}

/// The daemon's resident anonymous memory in KiB (RssAnon: its heap, not the binary's pages).
func anonymousMemoryKiB(_ pid: Int32) -> Int? {
    memoryKiB(pid, "RssAnon:")
}

/// The resident KiB of `pid`'s heap (glibc's main arena: `[heap]` in /proc/PID/smaps).
func heapResidentKiB(_ pid: Int32) -> Int? {
    guard let smaps = try? String(contentsOfFile: "/proc/\(pid)/smaps", encoding: .utf8) else { return nil }
    var inHeap = false
    for line in smaps.split(separator: "\n") {
        if let first = line.first, first.isHexDigit, line.contains("-") {
            inHeap = line.hasSuffix("[heap]")
        } else if inHeap, line.hasPrefix("Rss:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
    }
    return nil
}

/// A figure of /proc/PID/status, in KiB.
private func memoryKiB(_ pid: Int32, _ field: String) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    let line = status.split(separator: "\n").first { $0.hasPrefix(field) }
    return line?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
}
