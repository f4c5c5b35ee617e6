internal import CLinux

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

/// Socket activation: the descriptors passed through `LISTEN_FDS`, `LISTEN_PID` and `LISTEN_FDNAMES`.
public enum ListenFDs {
    /// The descriptors passed to this process, with their names; empty when none were (or they were meant for
    /// another process). The environment variables are unset afterwards, so children do not inherit them.
    public static func take() -> [ListenFD] {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        let pid = variable("LISTEN_PID")
        let count = variable("LISTEN_FDS")
        let names = variable("LISTEN_FDNAMES")
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        guard let pid, Int32(pid) == getpid(), let count = count.flatMap({ Int32($0) }), count > 0,
            count <= Int32.max - firstDescriptor
        else { return [] }
        // Each descriptor must be open (a count larger than what was passed is refused before anything is made
        // for it), and is made close-on-exec: not inherited by the hooks netdevd starts.
        for descriptor in firstDescriptor..<firstDescriptor + count {
            guard fcntl(descriptor, F_SETFD, FD_CLOEXEC) == 0 else { return [] }
        }
        // Without names each is "unknown"; with names, one per descriptor (otherwise none are trusted).
        var labels = Array(repeating: "unknown", count: Int(count))
        if let names {
            let given =
                names.isEmpty ? [] : names.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard given.count == Int(count) else { return [] }
            labels = given
        }
        return labels.enumerated().map { index, name in
            ListenFD(fileDescriptor: firstDescriptor + Int32(index), name: name)
        }
    }

    /// `SD_LISTEN_FDS_START`: the first passed descriptor.
    static let firstDescriptor: Int32 = 3
}
