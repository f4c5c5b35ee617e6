internal import CSystemd
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One field of a message to the service manager (sd_notify(3)).
public enum NotifyField: Sendable, Equatable {
    /// `READY=1`: start-up (or a reload) is finished.
    case ready
    /// `RELOADING=1` with `MONOTONIC_USEC=`: a reload began at this CLOCK_MONOTONIC time, in µs.
    case reloading(monotonicMicroseconds: UInt64)
    /// `STOPPING=1`: shutting down.
    case stopping
    /// `STATUS=`: one line for `systemctl status`; line breaks are replaced by spaces.
    case status(String)
    /// `WATCHDOG=1`: still alive.
    case watchdog
    /// `EXTEND_TIMEOUT_USEC=`: ask for more time for the current start, reload or stop.
    case extendTimeout(microseconds: UInt64)
    /// `ERRNO=`: the error the service failed with.
    case errno(Int32)
    /// A custom `X_...=value` field; the key must start with `X_` and be a valid field name.
    case custom(key: String, value: String)

    /// The `KEY=value` line(s) this field adds to a notification.
    var lines: [String] {
        switch self {
        case .ready: ["READY=1"]
        case .reloading(let usec): ["RELOADING=1", "MONOTONIC_USEC=\(usec)"]
        case .stopping: ["STOPPING=1"]
        case .status(let text): ["STATUS=" + text.map { $0.isNewline ? " " : String($0) }.joined()]
        case .watchdog: ["WATCHDOG=1"]
        case .extendTimeout(let usec): ["EXTEND_TIMEOUT_USEC=\(usec)"]
        case .errno(let code): ["ERRNO=\(code)"]
        case .custom(let key, let value): ["\(key)=\(value.map { $0.isNewline ? " " : String($0) }.joined())"]
        }
    }
}

/// Why a notification could not be sent.
public enum NotifyError: Error, Equatable, CustomStringConvertible, Sendable {
    /// A custom key that is not `X_` followed by upper-case letters, digits and underscores.
    case invalidCustomKey(String)
    /// Sending failed with this errno (for example the socket in NOTIFY_SOCKET does not exist).
    case sendFailed(errno: Int32)
    /// The manager's queue stayed full for this long: the notification waits for room on its own; it goes out when
    /// the manager reads again, and later ones are dropped until then (``stillWaiting``).
    case managerNotReading(milliseconds: Int32)
    /// An earlier notification outlived its sender's wait and still waits for room in the manager's queue: this
    /// one was dropped.
    case stillWaiting

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .invalidCustomKey(let key):
            "notify: custom key '\(key)' must start with X_ and contain only A-Z, 0-9 and _"
        case .sendFailed(let code):
            "notify: sending to NOTIFY_SOCKET failed: \(String(cString: strerror(code))) (errno \(code))"
        case .managerNotReading(let milliseconds):
            "notify: the service manager took no notification for \(milliseconds) ms (its queue stayed full); "
                + "later notifications are dropped until it reads again"
        case .stillWaiting:
            "notify: an earlier notification still waits for the service manager to read; this one was dropped"
        }
    }
}

/// Tells the service manager about the service's state, with libsystemd's `sd_notify(3)`.
///
/// Several fields go out in one datagram, in the order given. When `NOTIFY_SOCKET` is unset (not started by
/// systemd with `Type=notify`) nothing is sent and `send` returns `false`; a failure to send is thrown, never
/// hidden.
///
/// sd_notify(3) sends on a blocking socket: while the manager's queue is full it waits for room, for good if the
/// manager never reads again. So the calls are made one after another on a queue of their own, and a sender waits
/// for its call at most a bound (``send(_:waitMilliseconds:)``); once a call has outlived that, notifications are
/// dropped at once until it returns. A stuck manager therefore never holds the sender, nor the process's stop.
public struct ServiceNotifier: Sendable {
    /// A notifier using the process's `NOTIFY_SOCKET`.
    public init() {}

    /// `true` when `NOTIFY_SOCKET` is set, so notifications go somewhere.
    public var isEnabled: Bool {
        getenv("NOTIFY_SOCKET") != nil
    }

    /// The datagram `fields` make: their `KEY=value` lines joined by newlines.
    public static func encode(_ fields: [NotifyField]) throws(NotifyError) -> String {
        for case .custom(let key, _) in fields where !isValidCustomKey(key) {
            throw .invalidCustomKey(key)
        }
        return fields.flatMap(\.lines).joined(separator: "\n")
    }

    /// Sends `fields` in one datagram. Returns `false` when `NOTIFY_SOCKET` is unset (nothing sent).
    ///
    /// Waits at most `waitMilliseconds` for the manager to take the notification, then throws
    /// ``NotifyError/managerNotReading(milliseconds:)`` (the notification goes out when the manager reads again);
    /// until it has, later ones throw ``NotifyError/stillWaiting`` at once and are not sent.
    @discardableResult
    public func send(_ fields: [NotifyField], waitMilliseconds: Int32 = 5_000) throws(NotifyError) -> Bool {
        let message = try Self.encode(fields)
        guard isEnabled else { return false }
        return try NotifyCalls.shared.send(message, waitMilliseconds: waitMilliseconds)
    }

    /// The current CLOCK_MONOTONIC time in microseconds, for ``NotifyField/reloading(monotonicMicroseconds:)``.
    public static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    /// The watchdog interval the service manager expects pings within (`WATCHDOG_USEC`, honouring
    /// `WATCHDOG_PID`), in microseconds, as `sd_watchdog_enabled(3)` reads it; `nil` when the watchdog is off for
    /// this process.
    public static func watchdogInterval() -> UInt64? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0 else { return nil }
        return usec
    }

    private static func isValidCustomKey(_ key: String) -> Bool {
        key.hasPrefix("X_") && key.count <= 64
            && key.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}

/// The process's `sd_notify(3)` calls, made one after another on a serial queue so that none holds its sender for
/// longer than the sender's bound (see ``ServiceNotifier``).
private final class NotifyCalls: Sendable {
    static let shared = NotifyCalls()

    private let queue = DispatchQueue(label: "sd-notify")
    /// A call outlived its sender's wait and has not returned: the manager reads nothing, and sends are refused
    /// until it does.
    private let stuck = Atomic<Bool>(false)

    /// One call's result, handed from the queue to its sender.
    private final class Call: Sendable {
        let done = DispatchSemaphore(value: 0)
        let result = Atomic<Int32>(0)
        let finished = Atomic<Bool>(false)
    }

    func send(_ message: String, waitMilliseconds: Int32) throws(NotifyError) -> Bool {
        guard !stuck.load(ordering: .sequentiallyConsistent) else { throw .stillWaiting }
        let call = Call()
        queue.async { [self] in
            call.result.store(sd_notify(0, message), ordering: .relaxed)
            call.finished.store(true, ordering: .sequentiallyConsistent)
            stuck.store(false, ordering: .sequentiallyConsistent)
            call.done.signal()
        }
        let wait = max(waitMilliseconds, 0)
        guard call.done.wait(timeout: .now() + .milliseconds(Int(wait))) == .success else {
            // Stuck unless the call returned meanwhile (then it may have cleared the flag before it was set).
            stuck.store(true, ordering: .sequentiallyConsistent)
            if call.finished.load(ordering: .sequentiallyConsistent) {
                stuck.store(false, ordering: .sequentiallyConsistent)
            }
            throw .managerNotReading(milliseconds: wait)
        }
        let result = call.result.load(ordering: .relaxed)
        if result < 0 { throw .sendFailed(errno: -result) }
        return result > 0
    }
}
