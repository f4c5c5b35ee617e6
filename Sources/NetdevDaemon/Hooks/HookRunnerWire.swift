import NetdevSession

/// What netdevd asks its hook runner, one request per `SOCK_SEQPACKET` message (``HookRunnerCoding``). The runner
/// treats every request as untrusted: ``HookLaunch/problem(allowedNames:)`` and its own look at the hook file decide.
enum HookRunnerRequest: Equatable, Sendable {
    /// Start one hook.
    case start(HookLaunch)
    /// SIGTERM to a started hook's process group, SIGKILL after its grace; a second request sends SIGKILL at once.
    case terminate(id: Int)
    /// SIGKILL to every hook's process group, running or left behind: netdevd is exiting. Answered by
    /// ``HookRunnerReply/stoppedAll``.
    case stopAll
}

/// One hook to start, as netdevd asks for it.
struct HookLaunch: Equatable, Sendable {
    /// Chosen by netdevd, unique among its launches on one connection.
    var id: Int
    /// The event whose hooks `path` must be among (its own directory's and the hook directories').
    var event: String
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

/// What the hook runner tells netdevd, one reply per message (``HookRunnerCoding``).
enum HookRunnerReply: Equatable, Sendable {
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

/// A request or reply as the bytes of one message, and back: a tag byte, then each field in order, integers as 8
/// little-endian bytes (4 for a pid or status), strings as a 4-byte length and their UTF-8 bytes, lists as a 2-byte
/// count and their strings. Not JSON: encoding a launch and decoding its end through Codable was a tenth of
/// netdevd's CPU in the load harness's burst (perf), more than the spawn it replaced. A message with a field cut
/// short, a length past its end, an unknown tag or bytes after its last field is no message (`nil`).
enum HookRunnerCoding {
    static func encode(_ request: HookRunnerRequest) -> [UInt8] {
        var writer = Writer()
        switch request {
        case .start(let launch):
            writer.byte(1)
            writer.integer(launch.id)
            writer.string(launch.event)
            writer.string(launch.path)
            writer.strings(launch.arguments)
            writer.strings(launch.environment)
            writer.integer(launch.timeoutMilliseconds)
            writer.integer(launch.killGraceMilliseconds)
        case .terminate(let id):
            writer.byte(2)
            writer.integer(id)
        case .stopAll:
            writer.byte(3)
        }
        return writer.bytes
    }

    static func encode(_ reply: HookRunnerReply) -> [UInt8] {
        var writer = Writer()
        switch reply {
        case .started(let id, let pid):
            writer.byte(1)
            writer.integer(id)
            writer.int32(pid)
        case .ended(let id, let outcome, let leftProcesses):
            writer.byte(2)
            writer.integer(id)
            writer.string(outcome.name)
            switch outcome.status {
            case .exited(let code):
                writer.byte(0)
                writer.int32(code)
            case .killed(let signal):
                writer.byte(1)
                writer.int32(signal)
            case .timedOut:
                writer.byte(2)
            case .notStarted(let reason):
                writer.byte(3)
                writer.string(reason)
            case .lost(let reason):
                writer.byte(4)
                writer.string(reason)
            }
            writer.integer(outcome.durationMilliseconds)
            writer.string(outcome.outputTail)
            writer.byte(leftProcesses ? 1 : 0)
        case .stoppedAll:
            writer.byte(3)
        }
        return writer.bytes
    }

    static func decodeRequest(_ bytes: [UInt8]) -> HookRunnerRequest? {
        var reader = Reader(bytes: bytes)
        let request: HookRunnerRequest?
        switch reader.byte() {
        case 1:
            guard let id = reader.integer(), let event = reader.string(), let path = reader.string(),
                let arguments = reader.strings(),
                let environment = reader.strings(), let timeout = reader.integer(), let grace = reader.integer()
            else { return nil }
            request = .start(
                HookLaunch(
                    id: id, event: event, path: path, arguments: arguments, environment: environment,
                    timeoutMilliseconds: timeout, killGraceMilliseconds: grace))
        case 2: request = reader.integer().map { .terminate(id: $0) }
        case 3: request = .stopAll
        default: return nil
        }
        return reader.atEnd ? request : nil
    }

    static func decodeReply(_ bytes: [UInt8]) -> HookRunnerReply? {
        var reader = Reader(bytes: bytes)
        let reply: HookRunnerReply?
        switch reader.byte() {
        case 1:
            guard let id = reader.integer(), let pid = reader.int32() else { return nil }
            reply = .started(id: id, pid: pid)
        case 2:
            guard let id = reader.integer(), let name = reader.string() else { return nil }
            let status: HookExitStatus?
            switch reader.byte() {
            case 0: status = reader.int32().map { .exited($0) }
            case 1: status = reader.int32().map { .killed(signal: $0) }
            case 2: status = .timedOut
            case 3: status = reader.string().map { .notStarted($0) }
            case 4: status = reader.string().map { .lost($0) }
            default: status = nil
            }
            guard let status, let duration = reader.integer(), let output = reader.string(),
                let left = reader.byte(), left <= 1
            else { return nil }
            reply = .ended(
                id: id,
                outcome: HookOutcome(name: name, status: status, durationMilliseconds: duration, outputTail: output),
                leftProcesses: left == 1)
        case 3: reply = .stoppedAll
        default: return nil
        }
        return reader.atEnd ? reply : nil
    }

    private struct Writer {
        var bytes: [UInt8] = []

        init() {
            bytes.reserveCapacity(512)
        }

        mutating func byte(_ value: UInt8) {
            bytes.append(value)
        }

        mutating func integer(_ value: Int) {
            withUnsafeBytes(of: Int64(value).littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func int32(_ value: Int32) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func string(_ value: String) {
            var value = value
            value.withUTF8 { utf8 in
                withUnsafeBytes(of: UInt32(truncatingIfNeeded: utf8.count).littleEndian) {
                    bytes.append(contentsOf: $0)
                }
                bytes.append(contentsOf: utf8)
            }
        }

        mutating func strings(_ values: [String]) {
            withUnsafeBytes(of: UInt16(truncatingIfNeeded: values.count).littleEndian) { bytes.append(contentsOf: $0) }
            for value in values { string(value) }
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        private mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        private mutating func little<Value: FixedWidthInteger>(_ type: Value.Type) -> Value? {
            take(MemoryLayout<Value>.size).map { slice in
                slice.reversed().reduce(Value.zero) { ($0 << 8) | Value(truncatingIfNeeded: $1) }
            }
        }

        mutating func byte() -> UInt8? { take(1)?.first }

        mutating func integer() -> Int? { little(Int64.self).map { Int(truncatingIfNeeded: $0) } }

        mutating func int32() -> Int32? { little(Int32.self) }

        mutating func string() -> String? {
            guard let count = little(UInt32.self), let slice = take(Int(count)) else { return nil }
            return String(decoding: slice, as: UTF8.self)
        }

        mutating func strings() -> [String]? {
            guard let count = little(UInt16.self) else { return nil }
            var values: [String] = []
            values.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let value = string() else { return nil }
                values.append(value)
            }
            return values
        }
    }
}
