import Foundation

/// A datagram socket bound to a fresh path, standing in for systemd's notification socket (`NOTIFY_SOCKET`).
public final class NotifySocket {
    /// The socket's path, for `NOTIFY_SOCKET`.
    public let path: String
    private let fd: Int32

    /// Binds a new socket in the temporary directory.
    public init() throws {
        path = NSTemporaryDirectory() + "netdevd-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let bound = withUnixSocketAddress(path) { bind(fd, $0, $1) }
        guard bound == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    /// The next datagram, or `nil` after `timeout` seconds.
    public func receive(timeout: Double = 5) -> String? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count < 0 ? nil : String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Datagrams until one contains `needle` (returned last), or `nil` after `timeout` seconds in all.
    public func receive(until needle: String, timeout: Double = 10) -> [String]? {
        let deadline = Date().addingTimeInterval(timeout)
        var seen: [String] = []
        while Date() < deadline {
            guard let message = receive(timeout: max(0.01, deadline.timeIntervalSinceNow)) else { break }
            seen.append(message)
            if message.contains(needle) { return seen }
        }
        return nil
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
