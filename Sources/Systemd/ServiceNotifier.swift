internal import CSystemd

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
    /// sd_notify failed with this errno (for example the socket in NOTIFY_SOCKET does not exist).
    case sendFailed(errno: Int32)

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .invalidCustomKey(let key):
            "notify: custom key '\(key)' must start with X_ and contain only A-Z, 0-9 and _"
        case .sendFailed(let code):
            "notify: sending to NOTIFY_SOCKET failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

/// Tells the service manager about the service's state, through `$NOTIFY_SOCKET` (sd_notify(3)).
///
/// Several fields go out in one datagram, in the order given. When `NOTIFY_SOCKET` is unset (not started by
/// systemd with `Type=notify`) nothing is sent and `send` returns `false`; a failure to send is thrown, never
/// hidden.
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
    @discardableResult
    public func send(_ fields: [NotifyField]) throws(NotifyError) -> Bool {
        let message = try Self.encode(fields)
        let result = sd_notify(0, message)
        if result < 0 {
            throw .sendFailed(errno: -result)
        }
        return result > 0
    }

    /// The current CLOCK_MONOTONIC time in microseconds, for ``NotifyField/reloading(monotonicMicroseconds:)``.
    public static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    /// The watchdog interval the service manager expects pings within (`WATCHDOG_USEC`, honouring
    /// `WATCHDOG_PID`), in microseconds; `nil` when the watchdog is off for this process.
    public static func watchdogInterval() -> UInt64? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return usec
    }

    private static func isValidCustomKey(_ key: String) -> Bool {
        key.hasPrefix("X_") && key.count <= 64
            && key.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}
