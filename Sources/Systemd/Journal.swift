internal import CSystemd
import Syslog

#if canImport(Glibc)
import Glibc
#endif

/// Where a ``Journal`` writes.
public enum JournalTarget: Sendable, Equatable {
    /// journald, through `sd_journal_sendv(3)` (its native socket, `/run/systemd/journal/socket`).
    case journal
    /// Standard error, each line prefixed with `<N>` (the priority, sd-daemon(3)), for a service whose stderr
    /// journald or another syslog-aware collector reads.
    case prefixedStandardError
    /// Standard error as readable lines (`identifier[info]: message KEY=value ...`), for a person at a terminal.
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
        try SystemJournal.send(entry)
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

/// Entries to journald through libsystemd's `sd_journal_sendv(3)`.
///
/// libsystemd speaks journald's native protocol: one datagram per entry, a value with a newline (or any bytes) in
/// its binary-safe form, and an entry too large for a datagram in a sealed memfd. A journal that is not there drops
/// the entry silently (`sd_journal_sendv` returns 0); any other failure is its errno. The socket is blocking, as
/// libsystemd makes it: a journald that takes nothing holds the sending thread, so a caller with an event loop sends
/// from a writer thread of its own, never from the loop.
enum SystemJournal {
    static func send(_ entry: JournalEntry) throws(JournalError) {
        guard !entry.fields.isEmpty else { return }
        // Every `NAME=value` in one buffer and a vector into it, both on the stack for an entry of usual size: a burst
        // of thousands of entries allocates nothing here (allocations on the writer's thread leave the one malloc
        // arena fragmented after a burst).
        let byteCount = entry.fields.reduce(0) { $0 + $1.name.rawValue.utf8.count + 1 + $1.value.count }
        let result = withUnsafeTemporaryAllocation(byteCount: byteCount, alignment: 1) { buffer in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: entry.fields.count) { vectors -> Int32 in
                var offset = 0
                for (index, field) in entry.fields.enumerated() {
                    let start = offset
                    for byte in field.name.rawValue.utf8 {
                        buffer[offset] = byte
                        offset += 1
                    }
                    buffer[offset] = UInt8(ascii: "=")
                    offset += 1
                    field.value.withUnsafeBytes { value in
                        UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<offset + value.count]).copyMemory(
                            from: value)
                    }
                    offset += field.value.count
                    vectors.initializeElement(
                        at: index, to: iovec(iov_base: buffer.baseAddress! + start, iov_len: offset - start))
                }
                defer { vectors.baseAddress!.deinitialize(count: entry.fields.count) }
                return sd_journal_sendv(vectors.baseAddress, Int32(entry.fields.count))
            }
        }
        if result < 0 { throw JournalError(errno: -result) }
    }
}
