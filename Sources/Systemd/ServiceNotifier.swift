internal import CLinux

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
    /// The manager's queue stayed full for this long: the notification was dropped.
    case managerNotReading(milliseconds: Int32)

    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .invalidCustomKey(let key):
            "notify: custom key '\(key)' must start with X_ and contain only A-Z, 0-9 and _"
        case .sendFailed(let code):
            "notify: sending to NOTIFY_SOCKET failed: \(String(cString: strerror(code))) (errno \(code))"
        case .managerNotReading(let milliseconds):
            "notify: the service manager took no notification for \(milliseconds) ms (its queue stayed full); "
                + "the notification was dropped"
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
    ///
    /// Unlike sd_notify(3), which blocks for as long as the manager's queue is full (a stuck manager would hold the
    /// sender forever), this waits at most `waitMilliseconds` for room, then drops the notification and throws
    /// ``NotifyError/managerNotReading(milliseconds:)``. Addresses as systemd 252 gives them: a path, or `@` and
    /// an abstract name.
    @discardableResult
    public func send(_ fields: [NotifyField], waitMilliseconds: Int32 = 5_000) throws(NotifyError) -> Bool {
        let message = try Self.encode(fields)
        guard let address = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }) else { return false }
        var name = Array(address.utf8)
        if name.first == UInt8(ascii: "@") {
            name[0] = 0
        } else if name.first != UInt8(ascii: "/") {
            throw .sendFailed(errno: EAFNOSUPPORT)
        }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        guard name.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else {
            throw .sendFailed(errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { path in path.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .sendFailed(errno: errno) }
        defer { close(fd) }
        // Connected, so that poll says when the manager's queue has room again.
        let connected = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard connected == 0 else { throw .sendFailed(errno: errno) }
        // Room can be taken by another service's notification before this one is sent (the manager's socket is
        // shared), and a signal can cut a poll short: the wait is against a deadline, not one poll.
        let wait = Int64(max(waitMilliseconds, 0))
        let deadline = Self.monotonicMicroseconds() / 1000 + UInt64(wait)
        while true {
            if Glibc.send(fd, message, message.utf8.count, Int32(MSG_NOSIGNAL)) >= 0 { return true }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { throw .sendFailed(errno: code) }
            let now = Self.monotonicMicroseconds() / 1000
            guard now < deadline else { throw .managerNotReading(milliseconds: Int32(wait)) }
            var room = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&room, 1, Int32(deadline - now))
        }
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
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if let pid = variable("WATCHDOG_PID"), Int32(pid) != getpid() { return nil }
        // UInt64.max is systemd's "infinity", which sd_watchdog_enabled refuses too.
        guard let usec = variable("WATCHDOG_USEC").flatMap({ UInt64($0) }), usec > 0, usec < UInt64.max else {
            return nil
        }
        return usec
    }

    private static func isValidCustomKey(_ key: String) -> Bool {
        key.hasPrefix("X_") && key.count <= 64
            && key.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}
