internal import CSystemd
public import Syslog

#if canImport(Glibc)
import Glibc
#endif

/// One field of an entry read back from the journal: its name and its value's bytes.
public struct JournalRecordField: Sendable, Equatable {
    /// The name, trusted ones (`_PID`, `_SYSTEMD_UNIT`) included.
    public var name: String
    /// The value as stored: text, or any bytes.
    public var value: [UInt8]

    /// A field named `name` with `value`'s bytes.
    public init(name: String, value: [UInt8]) {
        self.name = name
        self.value = value
    }
}

/// One entry read back from the journal.
public struct JournalRecord: Sendable, Equatable {
    /// When journald received it, in microseconds since the epoch (`__REALTIME_TIMESTAMP`).
    public var realtimeMicroseconds: UInt64
    /// Its fields, as the journal stores them; a name may repeat.
    public var fields: [JournalRecordField]

    /// An entry received at `realtimeMicroseconds` with `fields`.
    public init(realtimeMicroseconds: UInt64, fields: [JournalRecordField]) {
        self.realtimeMicroseconds = realtimeMicroseconds
        self.fields = fields
    }

    /// The first value of `name` as text (invalid UTF-8 repaired), or `nil` when the entry has none.
    public func value(of name: String) -> String? {
        fields.first { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// `PRIORITY` as a level; entries without one are `info`, as journalctl shows them.
    public var priority: LogPriority {
        value(of: "PRIORITY").flatMap(Int.init).flatMap(LogPriority.init(rawValue:)) ?? .info
    }
}

/// Why the journal cannot be read.
public struct JournalReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was being done (`opening /var/log/x`).
    public let action: String
    /// The errno sd-journal returned.
    public let errno: Int32

    /// A sentence a person can act on.
    public var description: String {
        "journal: \(action) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// One field's value an entry must have, for ``JournalReader/match(anyOf:)``.
public struct JournalMatch: Sendable, Equatable {
    /// The field's name (`NETDEVD_IFNAME`, `_SYSTEMD_UNIT`).
    public var field: String
    /// The value it must have, exactly.
    public var value: String

    /// `field` must be `value`.
    public init(_ field: String, _ value: String) {
        self.field = field
        self.value = value
    }
}

/// Reads journal entries with libsystemd's sd-journal(3): the host's journal files, or those in one directory
/// (a central journal written by systemd-journal-remote, say).
///
/// Entries come oldest first. sd-journal skips what it cannot read of a corrupted or rotated file where it can; an
/// entry it cannot read at all ends the read with its errno. Not `Sendable`: one thread reads.
public final class JournalReader {
    private let journal: OpaquePointer

    /// Opens the local host's journal (system and user files; which of them the caller may read is decided by their
    /// permissions), or every journal file in `directory`.
    public init(directory: String? = nil) throws(JournalReadError) {
        var opened: OpaquePointer?
        let result: Int32
        if let directory {
            result = sd_journal_open_directory(&opened, directory, 0)
        } else {
            result = sd_journal_open(&opened, Int32(SD_JOURNAL_LOCAL_ONLY))
        }
        guard result >= 0, let opened else {
            throw JournalReadError(action: "opening " + (directory ?? "the journal"), errno: -result)
        }
        journal = opened
        // Whole values, however long (a hook's output, say); sd-journal cuts them at 64 KiB by default.
        _ = sd_journal_set_data_threshold(journal, 0)
    }

    deinit {
        sd_journal_close(journal)
    }

    /// Only entries that have every field of one of `groups` (each group's fields distinct; groups are
    /// alternatives). No groups: every entry.
    public func match(anyOf groups: [[JournalMatch]]) throws(JournalReadError) {
        sd_journal_flush_matches(journal)
        for (index, group) in groups.enumerated() {
            if index > 0 {
                let result = sd_journal_add_disjunction(journal)
                guard result >= 0 else { throw JournalReadError(action: "combining matches", errno: -result) }
            }
            for term in group {
                let text = Array((term.field + "=" + term.value).utf8)
                let result = text.withUnsafeBytes { sd_journal_add_match(journal, $0.baseAddress, $0.count) }
                guard result >= 0 else {
                    throw JournalReadError(action: "matching \(term.field)=\(term.value)", errno: -result)
                }
            }
        }
    }

    /// The last `count` entries received at or after `since` (µs since the epoch), oldest first; every such entry
    /// when `count` is `nil`. Afterwards the reader stands on the newest entry read (or at the end), so
    /// ``wait(timeoutMicroseconds:)`` and ``next()`` return the entries written after it, none skipped.
    public func last(_ count: Int?, since: UInt64? = nil) throws(JournalReadError) -> [JournalRecord] {
        guard since == nil, let count else {
            // Forward from the time (or the start): the reader ends at the end, past the newest entry.
            if let since {
                try check(sd_journal_seek_realtime_usec(journal, since), "seeking to the time")
            } else {
                try check(sd_journal_seek_head(journal), "seeking to the start")
            }
            var records: [JournalRecord] = []
            while let record = try next() {
                // Entries are ordered by file and boot, not strictly by time: a clock step puts older ones after.
                if let since, record.realtimeMicroseconds < since { continue }
                records.append(record)
            }
            return count.map { Array(records.suffix($0)) } ?? records
        }
        // Backwards from the end; the newest entry's cursor marks where following goes on.
        try check(sd_journal_seek_tail(journal), "seeking to the end")
        var records: [JournalRecord] = []
        var newest: String?
        while records.count < count, try check(sd_journal_previous(journal), "reading backwards") > 0 {
            if newest == nil { newest = try cursor() }
            records.append(try current())
        }
        if let newest {
            try check(sd_journal_seek_cursor(journal, newest), "going back to the newest entry")
            try check(sd_journal_next(journal), "going back to the newest entry")
        } else {
            // Nothing read (or none asked for): stand on the newest entry there is, if any.
            try check(sd_journal_seek_tail(journal), "seeking to the end")
            _ = try check(sd_journal_previous(journal), "reading backwards")
        }
        return records.reversed()
    }

    /// The cursor of the entry the reader stands on.
    private func cursor() throws(JournalReadError) -> String {
        var text: UnsafeMutablePointer<CChar>?
        try check(sd_journal_get_cursor(journal, &text), "reading an entry's cursor")
        defer { free(text) }
        return text.map { String(cString: $0) } ?? ""
    }

    /// The entry after the reader's position, or `nil` at the end.
    public func next() throws(JournalReadError) -> JournalRecord? {
        guard try check(sd_journal_next(journal), "reading") > 0 else { return nil }
        return try current()
    }

    /// Waits until the journal changes or `timeoutMicroseconds` passes; `true` when it changed (new entries or
    /// files: call ``next()``).
    @discardableResult
    public func wait(timeoutMicroseconds: UInt64) throws(JournalReadError) -> Bool {
        try check(sd_journal_wait(journal, timeoutMicroseconds), "waiting for entries") != Int32(SD_JOURNAL_NOP)
    }

    /// The entry the reader stands on.
    private func current() throws(JournalReadError) -> JournalRecord {
        var realtime: UInt64 = 0
        try check(sd_journal_get_realtime_usec(journal, &realtime), "reading an entry's time")
        var fields: [JournalRecordField] = []
        var data: UnsafeRawPointer?
        var length = 0
        sd_journal_restart_data(journal)
        // Fields it cannot read (compressed with what this libsystemd lacks) are left out, not an error.
        while sd_journal_enumerate_available_data(journal, &data, &length) > 0 {
            guard let data else { continue }
            let bytes = UnsafeRawBufferPointer(start: data, count: length)
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { continue }
            fields.append(
                JournalRecordField(
                    name: String(decoding: bytes[..<equals], as: UTF8.self), value: Array(bytes[(equals + 1)...])))
        }
        return JournalRecord(realtimeMicroseconds: realtime, fields: fields)
    }

    @discardableResult
    private func check(_ result: Int32, _ action: String) throws(JournalReadError) -> Int32 {
        guard result >= 0 else { throw JournalReadError(action: action, errno: -result) }
        return result
    }
}
