import JSONCoding
import NetdevSession

/// What netdevd asks its hook runner, one request per `SOCK_SEQPACKET` message, as JSON. The runner treats every
/// request as untrusted: ``HookLaunch/problem(allowedNames:)`` and its own look at the hook file decide.
enum HookRunnerRequest: Codable, Equatable, Sendable {
    /// Start one hook.
    case start(HookLaunch)
    /// SIGTERM to a started hook's process group, SIGKILL after its grace; a second request sends SIGKILL at once.
    case terminate(id: Int)
    /// SIGKILL to every hook's process group, running or left behind: netdevd is exiting. Answered by
    /// ``HookRunnerReply/stoppedAll``.
    case stopAll
}

/// One hook to start, as netdevd asks for it.
struct HookLaunch: Codable, Equatable, Sendable {
    /// Chosen by netdevd, unique among its launches on one connection.
    var id: Int
    /// The hook's full path: it must be a hook the runner finds in its own directories and may run.
    var path: String
    /// The arguments after the path (`argv[1...]`).
    var arguments: [String]
    /// `NAME=value` pairs; the runner adds `PATH` and `LANG` itself.
    var environment: [String]
    /// 0: no limit.
    var timeoutMilliseconds: Int
    /// Between SIGTERM and SIGKILL.
    var killGraceMilliseconds: Int

    /// What is wrong with the request as a request (sizes, names, ranges), in words; `nil` when nothing is. The
    /// hook file itself is the runner's to examine.
    func problem(allowedNames: (String) -> Bool) -> String? {
        let limits = HookRunnerLimits.self
        guard id >= 0 else { return "a negative id" }
        guard path.hasPrefix("/"), path.utf8.count <= limits.maximumFieldBytes, !path.utf8.contains(0) else {
            return "a hook path that is not an absolute path of at most \(limits.maximumFieldBytes) bytes"
        }
        guard arguments.count <= limits.maximumArguments else {
            return "\(arguments.count) arguments (at most \(limits.maximumArguments))"
        }
        for argument in arguments where argument.utf8.count > limits.maximumFieldBytes || argument.utf8.contains(0) {
            return "an argument over \(limits.maximumFieldBytes) bytes or with a NUL byte"
        }
        guard environment.count <= limits.maximumEnvironment else {
            return "\(environment.count) environment variables (at most \(limits.maximumEnvironment))"
        }
        for assignment in environment {
            guard let equals = assignment.utf8.firstIndex(of: UInt8(ascii: "=")), !assignment.utf8.contains(0) else {
                return "an environment entry that is not NAME=value"
            }
            let name = String(assignment[..<equals])
            guard allowedNames(name) else { return "the environment variable \(name), which hooks are never given" }
        }
        guard (0...limits.maximumTimeoutMilliseconds).contains(timeoutMilliseconds) else {
            return "a timeout of \(timeoutMilliseconds) ms"
        }
        guard (0...limits.maximumKillGraceMilliseconds).contains(killGraceMilliseconds) else {
            return "a kill grace of \(killGraceMilliseconds) ms"
        }
        return nil
    }
}

/// What the hook runner tells netdevd, one reply per message, as JSON.
enum HookRunnerReply: Codable, Equatable, Sendable {
    /// The hook's process runs (its pid, in the runner's view).
    case started(id: Int, pid: Int32)
    /// The hook's run is over: how it ended (``HookExitStatus/notStarted(_:)`` with the reason when the runner
    /// refused or could not start it), and whether it left processes running in its group (stopped by the runner).
    case ended(id: Int, outcome: HookOutcome, leftProcesses: Bool)
    /// Every hook's process group has had SIGKILL.
    case stoppedAll
}

/// The bounds of the runner's protocol, which the runner enforces on every request.
enum HookRunnerLimits {
    /// A message longer than this is refused whole (a link's `NETDEVD_JSON` with its addresses fits many times).
    static let maximumMessageBytes = 128 * 1024
    static let maximumFieldBytes = 4096
    static let maximumArguments = 8
    static let maximumEnvironment = 64
    /// 365 days, as `[Hooks] TimeoutSec=` allows.
    static let maximumTimeoutMilliseconds = 365 * 24 * 3600 * 1000
    static let maximumKillGraceMilliseconds = 600_000
    /// Hooks running at once on one connection (netdevd runs at most `[Hooks] Parallelism=`, 64, at once).
    static let maximumRunning = 256

    /// The environment variables a hook may be given: netdevd's own `NETDEVD_*` names (capitals, digits and `_`).
    static func isHookVariable(_ name: String) -> Bool {
        name.hasPrefix("NETDEVD_") && name.utf8.count > 8
            && name.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }
}

/// A request or reply as the bytes of one message, and back.
enum HookRunnerCoding {
    static func encode(_ value: some Encodable) -> [UInt8]? {
        try? JSONTextEncoder().encode(value)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, _ bytes: [UInt8]) -> Value? {
        try? JSONTextDecoder().decode(type, from: bytes)
    }
}
