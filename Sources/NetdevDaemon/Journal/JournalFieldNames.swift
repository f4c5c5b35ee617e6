internal import CLinux
import Dispatch
import Locking
import NetdevSession
import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// Normalised journal field names by the session's field name, and parsed message ids by catalog id.
/// `@unchecked Sendable`: used by one writer only, the journal's writer thread (or, without one, its serial fallback
/// queue): ``JournalQueue`` hands it to `write` there.
final class JournalFieldNames: @unchecked Sendable {
    private var known: [String: JournalFieldName] = [:]
    private var messageIDs: [String: JournalMessageID] = [:]

    /// The message id of a catalog entry's 32 hex digits, parsed once per kind; `nil` if malformed.
    func messageID(_ hex: String) -> JournalMessageID? {
        if let id = messageIDs[hex] { return id }
        let id = JournalMessageID(hex)
        if let id, messageIDs.count < 1_024 { messageIDs[hex] = id }
        return id
    }

    func name(_ field: String) -> JournalFieldName {
        if let name = known[field] { return name }
        let name = JournalFieldName.normalizing(field)
        if known.count < 1_024 { known[field] = name }
        return name
    }
}
