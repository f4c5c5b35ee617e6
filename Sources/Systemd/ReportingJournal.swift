import Locking

#if canImport(Glibc)
import Glibc
#endif

/// A ``Journal`` whose failures never reach the caller and are never silent. The first failure is written on standard
/// error (prefixed with the journal's identifier; later ones are not, so a broken journal does not flood a terminal).
/// Entries that fail are counted, and the first entry the journal takes again is followed by a warning saying how
/// many were lost and the last reason (journald restarted, say). Safe to use from any thread: its counts are behind a
/// ``Locked``.
public final class ReportingJournal: Sendable {
    /// Where entries go.
    public let journal: Journal
    private let consequence: String
    private struct Failures {
        /// Entries lost since the last one the journal took.
        var lost = 0
        /// Entries lost since the journal was made.
        var total = 0
        var reason = ""
        var warned = false
    }

    private let failures = Locked(Failures())

    /// Sends to `journal`; `consequence` ends the warning about lost entries (what the reader should know, e.g.
    /// where the state can still be seen), or is left out when empty.
    public init(_ journal: Journal, consequence: String = "") {
        self.journal = journal
        self.consequence = consequence
    }

    /// Entries that could not be written since the journal was made.
    public var lostEntries: Int {
        failures.withLock { $0.total }
    }

    /// Writes `entry`, reporting and counting a failure as the type says.
    public func send(_ entry: JournalEntry) {
        do {
            try journal.send(entry)
        } catch {
            let first = failures.withLock { state -> Bool in
                state.lost += 1
                state.total += 1
                state.reason = error.description
                defer { state.warned = true }
                return !state.warned
            }
            if first {
                let line = "\(journal.identifier): \(error); further journal failures are counted, not printed\n"
                _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            }
            return
        }
        let lost = failures.withLock { state -> (count: Int, reason: String)? in
            guard state.lost > 0 else { return nil }
            defer { state.lost = 0 }
            return (state.lost, state.reason)
        }
        guard let lost else { return }
        let warning = JournalEntry(
            message: "\(lost.count) journal entries were lost while the journal took none (\(lost.reason))"
                + (consequence.isEmpty ? "" : ". " + consequence),
            priority: .warning)
        do {
            try journal.send(warning)
        } catch {
            failures.withLock { state in
                state.lost += lost.count + 1
                state.total += 1
            }
        }
    }
}
