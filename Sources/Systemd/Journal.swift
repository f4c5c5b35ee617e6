internal import CLinux
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where a ``Journal`` writes.
public enum JournalTarget: Sendable, Equatable {
    /// journald's native socket (`/run/systemd/journal/socket`, the protocol `sd_journal_sendv` speaks).
    case journal
    /// Standard error, each line prefixed with `<N>` (the priority, sd-daemon(3)), for a service whose stderr
    /// journald or another syslog-aware collector reads.
    case prefixedStandardError
    /// Standard error as readable lines (`netdevd[info]: message KEY=value ...`), for a person at a terminal.
    case readableStandardError
}

/// Why an entry could not be written.
public struct JournalError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The errno of the failed send or write.
    public let errno: Int32

    /// A sentence a person can act on.
    public var description: String {
        "journal: writing the entry failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Writes structured entries to the systemd journal, or to standard error when there is no journal.
///
/// With ``JournalTarget/journal`` every field arrives as given, values with newlines or binary bytes included.
/// ``automaticTarget()`` picks the journal when its socket exists, else prefixed lines when standard error is not
/// a terminal (a supervisor reads it), else readable lines.
public struct Journal: Sendable {
    /// Where entries go.
    public let target: JournalTarget
    /// `SYSLOG_IDENTIFIER` added to every entry that has none.
    public let identifier: String

    /// A journal writing to `target` (by default the automatic choice) as `identifier`.
    public init(identifier: String, target: JournalTarget? = nil) {
        self.identifier = identifier
        self.target = target ?? Self.automaticTarget()
    }

    /// The journal when `/run/systemd/journal/socket` exists; otherwise standard error, prefixed unless it is a
    /// terminal.
    public static func automaticTarget() -> JournalTarget {
        if access("/run/systemd/journal/socket", W_OK) == 0 {
            return .journal
        }
        return isatty(STDERR_FILENO) == 1 ? .readableStandardError : .prefixedStandardError
    }

    /// `true` when standard error is already connected to the journal (`JOURNAL_STREAM` names its device and
    /// inode), so lines written there are journal entries too.
    public static func standardErrorIsJournal() -> Bool {
        guard let stream = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// Writes `entry`, adding `SYSLOG_IDENTIFIER` when it has none.
    public func send(_ entry: JournalEntry) throws(JournalError) {
        var entry = entry
        if entry.value(of: .syslogIdentifier) == nil {
            entry.append(.syslogIdentifier, identifier)
        }
        switch target {
        case .journal:
            try sendToJournal(entry)
        case .prefixedStandardError:
            try writeToStandardError(Self.prefixedLines(entry))
        case .readableStandardError:
            try writeToStandardError(Self.readableLine(entry))
        }
    }

    /// What ``JournalTarget/prefixedStandardError`` writes for `entry`: `<N>` followed by the message, one
    /// prefixed line per line of the message.
    public static func prefixedLines(_ entry: JournalEntry) -> String {
        let message = entry.value(of: .message) ?? ""
        let priority = entry.priority.rawValue
        // Split on the byte journald splits on: a "\r\n" is one Character, which a split on "\n" would not cut.
        return message.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { "<\(priority)>\(String(decoding: $0, as: UTF8.self))\n" }
            .joined()
    }

    /// What ``JournalTarget/readableStandardError`` writes for `entry`: `identifier[level]: message KEY=value ...`,
    /// the custom fields after the message, on one line (newlines shown as `␤`).
    public static func readableLine(_ entry: JournalEntry) -> String {
        let standard: Set<JournalFieldName> = [
            .message, .priority, .syslogIdentifier, .codeFile, .codeLine, .codeFunction,
        ]
        let identifier = (entry.value(of: .syslogIdentifier) ?? "-").replacingNewlines()
        let message = (entry.value(of: .message) ?? "").replacingNewlines()
        let extras = entry.fields.filter { !standard.contains($0.name) && $0.name != .messageID }
            .map { "\($0.name)=\(String(decoding: $0.value, as: UTF8.self).replacingNewlines())" }
        let level = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"][entry.priority.rawValue]
        return ([("\(identifier)[\(level)]: \(message)")] + extras).joined(separator: " ") + "\n"
    }

    private func sendToJournal(_ entry: JournalEntry) throws(JournalError) {
        try NativeJournal.send(NativeJournal.encode(entry))
    }

    private func writeToStandardError(_ text: String) throws(JournalError) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw JournalError(errno: errno)
            }
            bytes = bytes.dropFirst(written)
        }
    }
}

extension String {
    fileprivate func replacingNewlines() -> String {
        map { $0.isNewline ? "␤" : String($0) }.joined()
    }
}

/// journald's native protocol (systemd's "Native Journal Protocol"), spoken directly rather than through
/// libsystemd, whose mapping and its compression and crypto libraries cost netdevd a megabyte of resident memory.
///
/// An entry is one datagram to `/run/systemd/journal/socket`: `NAME=value\n` per field, or, for a value with a
/// newline (or any bytes), `NAME\n`, its length as 64-bit little endian, the value and `\n`. An entry too large for
/// a datagram is written to a sealed memfd whose descriptor is sent instead. A journal that is not there
/// (`ENOENT`) drops the entry silently, as `sd_journal_sendv` does; any other failure is the send's errno.
///
/// The socket is connected to journald's: a datagram that names its address makes the kernel look the path up
/// again for every entry (a fifth of a send's cost in a burst). When journald's socket goes away (journald killed:
/// ECONNREFUSED) the next send connects again, to whatever is bound at the path then; until something is, entries
/// are sent naming the path, as before, and fail with its errno.
enum NativeJournal {
    static let socketPath = "/run/systemd/journal/socket"

    /// One socket for the process, close-on-exec, with an 8 MiB send buffer as libsystemd asks for it (forced
    /// where allowed, else up to `net.core.wmem_max`): `-1` when the kernel gave none (each send then says so).
    private static let socketDescriptor: Int32 = {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var size: Int32 = 8 << 20
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, length) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, length)
        }
        return fd
    }()

    /// `socketDescriptor` is connected to journald's socket (set by the first send that connects it, cleared when a
    /// send finds the peer gone). Sends from several threads may race to connect: connecting again is harmless.
    private static let connected = Atomic<Bool>(false)

    /// journald's address, and its length.
    private static func journalAddress() -> (sockaddr_un, socklen_t) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in path.copyBytes(from: socketPath.utf8) }
        return (address, socklen_t(MemoryLayout<sa_family_t>.size + socketPath.utf8.count))
    }

    /// Connects `fd` to journald's socket unless it is; `false` when it cannot be (no journal, or nothing bound).
    private static func connectIfNeeded(_ fd: Int32) -> Bool {
        if connected.load(ordering: .acquiring) { return true }
        var (address, length) = journalAddress()
        let done = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) == 0 }
        }
        if done { connected.store(true, ordering: .releasing) }
        return done
    }

    /// The datagram for `entry`.
    static func encode(_ entry: JournalEntry) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entry.fields.reduce(0) { $0 + $1.name.rawValue.utf8.count + $1.value.count + 10 })
        for field in entry.fields {
            bytes.append(contentsOf: field.name.rawValue.utf8)
            if field.value.contains(UInt8(ascii: "\n")) {
                bytes.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(field.value.count).littleEndian) { bytes.append(contentsOf: $0) }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes.append(contentsOf: field.value)
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    static func send(_ datagram: [UInt8]) throws(JournalError) {
        let fd = socketDescriptor
        guard fd >= 0 else { throw JournalError(errno: EMFILE) }
        var code = datagram.withUnsafeBytes { bytes in
            sendTo(fd, base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), count: bytes.count, descriptor: nil)
        }
        if code == 0 || code == ENOENT { return }
        guard code == EMSGSIZE || code == ENOBUFS || code == EAGAIN else { throw JournalError(errno: code) }
        // Too large for a datagram: the bytes go in a sealed memfd, and the descriptor in an empty datagram.
        let memory = memfd_create("journal-data", 0x0001 | 0x0002)  // MFD_CLOEXEC | MFD_ALLOW_SEALING
        guard memory >= 0 else { throw JournalError(errno: errno) }
        defer { close(memory) }
        var written = 0
        while written < datagram.count {
            let count = datagram.withUnsafeBytes { write(memory, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw JournalError(errno: errno)
            }
            written += count
        }
        // F_ADD_SEALS: F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE (journald refuses an unsealed memfd).
        guard fcntl(memory, 1033, Int32(0x0001 | 0x0002 | 0x0004 | 0x0008)) == 0 else {
            throw JournalError(errno: errno)
        }
        code = sendTo(fd, base: nil, count: 0, descriptor: memory)
        if code == 0 || code == ENOENT { return }
        throw JournalError(errno: code)
    }

    /// One `sendmsg` to journald's socket (`descriptor` passed along with SCM_RIGHTS); 0 or the errno. Through
    /// the connection when there is one; when the peer is found gone, connected again (or the path named) once.
    private static func sendTo(_ fd: Int32, base: UnsafeMutableRawPointer?, count: Int, descriptor: Int32?) -> Int32 {
        var (address, addressLength) = journalAddress()
        var vector = iovec(iov_base: base, iov_len: count)
        var message = msghdr()
        // Only for the memfd: a cmsghdr (16 bytes on 64-bit Linux) and one int, padded to 8 bytes,
        // CMSG_SPACE(sizeof(int)). Every other entry is sent without allocating.
        let controlSize = MemoryLayout<cmsghdr>.size + 8
        var control: UnsafeMutableRawPointer?
        defer { control?.deallocate() }
        if let descriptor {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: controlSize, alignment: 8)
            control = buffer
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: controlSize)
            let header = buffer.bindMemory(to: cmsghdr.self, capacity: 1)
            header.pointee.cmsg_len = MemoryLayout<cmsghdr>.size + MemoryLayout<Int32>.size
            header.pointee.cmsg_level = SOL_SOCKET
            header.pointee.cmsg_type = Int32(SCM_RIGHTS)
            (buffer + MemoryLayout<cmsghdr>.size).storeBytes(of: descriptor, as: Int32.self)
            message.msg_control = buffer
            message.msg_controllen = controlSize
        }
        var retried = false
        while true {
            let throughConnection = connectIfNeeded(fd)
            let sent = withUnsafeMutablePointer(to: &address) { address in
                withUnsafeMutablePointer(to: &vector) { vector in
                    message.msg_name = throughConnection ? nil : UnsafeMutableRawPointer(address)
                    message.msg_namelen = throughConnection ? 0 : addressLength
                    message.msg_iov = count > 0 ? vector : nil
                    message.msg_iovlen = count > 0 ? 1 : 0
                    return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                }
            }
            if sent >= 0 { return 0 }
            let code = errno
            if code == EINTR { continue }
            // The journald connected to is gone (ECONNREFUSED, and the kernel drops the connection with it;
            // ENOTCONN after that): connect again, once, to what is bound at the path now.
            if throughConnection && (code == ECONNREFUSED || code == ENOTCONN) && !retried {
                connected.store(false, ordering: .releasing)
                retried = true
                continue
            }
            return code
        }
    }
}
