#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed: which part of the program made it, the call, and the errno, so a person can tell what
/// the kernel refused (`netlink: bind failed: Operation not permitted (errno 1)`). The one error type of the Linux
/// adapters for a refused call.
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Who made the call (`netlink`, `udev`, `varlink`): the start of the message.
    public let subsystem: String
    /// The call that failed (`socket`, `bind`, `recv`, `udev_monitor_new_from_netlink`, ...).
    public let operation: String
    /// The errno it failed with.
    public let errno: Int32

    /// An error of `operation`, made by `subsystem`, with `errno`.
    public init(_ subsystem: String, operation: String, errno: Int32) {
        self.subsystem = subsystem
        self.operation = operation
        self.errno = errno
    }

    /// `<subsystem>: <operation> failed: <strerror> (errno <n>)`.
    public var description: String {
        "\(subsystem): \(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
