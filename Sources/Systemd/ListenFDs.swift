internal import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor the service manager passed to this process (socket activation, sd_listen_fds(3)).
public struct ListenFD: Sendable, Equatable {
    /// The descriptor number (3 and up).
    public var fileDescriptor: Int32
    /// Its name (`FileDescriptorName=` in the socket unit), `unknown` when none was given.
    public var name: String

    /// A passed descriptor.
    public init(fileDescriptor: Int32, name: String) {
        self.fileDescriptor = fileDescriptor
        self.name = name
    }
}

/// Socket activation: the descriptors passed through `LISTEN_FDS`, `LISTEN_PID` and `LISTEN_FDNAMES`, taken with
/// libsystemd's `sd_listen_fds_with_names(3)`.
public enum ListenFDs {
    /// The descriptors passed to this process, with their names; empty when none were, when they were meant for
    /// another process, or when what was said cannot be trusted (a count larger than the descriptors open, a name
    /// list of another length). The environment variables are unset afterwards, so children do not inherit them,
    /// and each descriptor is made close-on-exec: not inherited by the processes the service starts.
    public static func take() -> [ListenFD] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        defer {
            if let names {
                var index = 0
                while let name = names[index] {
                    free(name)
                    index += 1
                }
                free(names)
            }
        }
        guard count > 0 else { return [] }
        return (0..<Int(count)).map { index in
            let name = names?[index].map { String(cString: $0) } ?? "unknown"
            return ListenFD(fileDescriptor: SD_LISTEN_FDS_START + Int32(index), name: name)
        }
    }
}
