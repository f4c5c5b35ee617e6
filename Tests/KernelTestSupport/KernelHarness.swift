import Foundation
public import Testing

/// Tests that change the kernel's state (links, addresses, routes) or read a journal run only inside
/// `Tests/Harness/in-netns.sh`: as root, in a throw-away network namespace with its own /run, /dev, udevd and
/// journald. Anywhere else they are skipped with ``skipReason`` printed, never silently passed.
public enum KernelHarness {
    /// `true` inside the harness, as root.
    public static var isActive: Bool {
        ProcessInfo.processInfo.environment["NETDEVD_TEST_HARNESS"] == "1" && getuid() == 0
    }

    /// The trait every kernel suite carries beside `.tags(.kernel)`: enabled inside the harness, skipped with
    /// ``skipReason`` anywhere else.
    public static var enabled: ConditionTrait { .enabled(if: isActive, skipReason) }

    /// Why kernel tests are skipped here.
    public static let skipReason: Comment =
        "needs root in a throw-away network namespace with a private udevd and journald; `make test` as root runs it through Tests/Harness/in-netns.sh"
}

extension Tag {
    /// Every suite that needs ``KernelHarness`` carries this tag: `make test-kernel` runs exactly the tests the unit
    /// pass's event stream shows with it (`swift test` filters by name only, so Tests/Harness/tally.py turns the
    /// tagged tests into a name filter), and counts them.
    @Tag public static var kernel: Self
}

/// A command that failed, with what it printed.
public struct CommandFailure: Error, CustomStringConvertible {
    /// The command line.
    public let command: [String]
    /// Its exit status.
    public let status: Int32
    /// What it wrote to standard error.
    public let standardError: String

    /// `command` exited `status`: standard error.
    public var description: String {
        "`\(command.joined(separator: " "))` exited \(status): \(standardError)"
    }
}

/// Runs `arguments[0]` (looked up in PATH) with the rest as arguments; returns standard output, throws
/// ``CommandFailure`` on a non-zero exit.
@discardableResult
public func run(_ arguments: String...) throws -> String {
    try run(arguments)
}

/// Runs `arguments[0]` (looked up in PATH) with the rest as arguments, `input` on standard input; returns
/// standard output, throws ``CommandFailure`` on a non-zero exit.
@discardableResult
public func run(_ arguments: [String], input: String? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    let inputPipe = Pipe()
    if input != nil {
        process.standardInput = inputPipe
    }
    try process.run()
    if let input {
        inputPipe.fileHandleForWriting.write(Data(input.utf8))
        try inputPipe.fileHandleForWriting.close()
    }
    let outData = output.fileHandleForReading.readDataToEndOfFile()
    let errData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CommandFailure(
            command: arguments,
            status: process.terminationStatus,
            standardError: String(decoding: errData, as: UTF8.self)
        )
    }
    return String(decoding: outData, as: UTF8.self)
}

/// `ip ARGS...`.
@discardableResult
public func ip(_ arguments: String...) throws -> String {
    try run(["ip"] + arguments)
}

/// Runs several `ip` commands in one process (`ip -batch -`), for floods.
public func ipBatch(_ lines: [String]) throws {
    try run(["ip", "-batch", "-"], input: lines.joined(separator: "\n") + "\n")
}

/// The kernel's links (`index name mtu`) and addresses (`index address/prefix`), from `ip -j link` and
/// `ip -j address`, sorted: the lines tests compare netdevd's model with.
public func kernelLinksAndAddresses() throws -> (links: [String], addresses: [String]) {
    let links = try jsonObjects(ip("-j", "link", "show")).map {
        "\($0["ifindex"] as? Int ?? 0) \($0["ifname"] as? String ?? "") \($0["mtu"] as? Int ?? 0)"
    }
    let addresses = try jsonObjects(ip("-j", "address", "show")).flatMap { link in
        ((link["addr_info"] as? [[String: Any]]) ?? []).map {
            "\(link["ifindex"] as? Int ?? 0) \($0["local"] as? String ?? "")/\($0["prefixlen"] as? Int ?? 0)"
        }
    }
    return (links.sorted(), addresses.sorted())
}

/// Parses `ip -j ...` or `journalctl -o json` output: one JSON value, or one JSON object per line.
public func jsonObjects(_ text: String) throws -> [[String: Any]] {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !trimmed.isEmpty else { return [] }
    if trimmed.hasPrefix("[") {
        return (try JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [[String: Any]]) ?? []
    }
    return try trimmed.split(separator: "\n").compactMap { line in
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` seconds pass; returns whether it held.
public func waitUntil(timeout: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        if try condition() { return true }
        usleep(10_000)
    } while Date() < deadline
    return try condition()
}

/// An address added to and removed from `link` without end, thousands of times a second (`ip -batch` in a shell
/// loop), until ``stop()``: changes that make the kernel mark every try of an address dump interrupted.
public final class AddressChurn {
    private let process = Process()
    private let batch: String

    /// Starts adding and removing `address` on `link`.
    public init(link: String, address: String = "192.0.2.1/32") throws {
        batch = FileManager.default.temporaryDirectory.appendingPathComponent("netdevd-churn-\(link)-\(getpid())").path
        try String(repeating: "addr add \(address) dev \(link)\naddr del \(address) dev \(link)\n", count: 500)
            .write(toFile: batch, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "while :; do ip -batch \(batch); done"]
        try process.run()
    }

    /// The loop still runs.
    public var isRunning: Bool { process.isRunning }

    /// Ends the loop and waits for it.
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: batch)
    }

    deinit { stop() }
}
