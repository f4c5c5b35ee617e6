import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Counts journal writes that failed and says so once on standard error, so a broken journal is noticed without
/// flooding the terminal.
final class FailureCounter: Sendable {
    private let failures = Atomic<Int>(0)

    var count: Int {
        failures.load(ordering: .relaxed)
    }

    func record(_ error: JournalError) {
        if failures.add(1, ordering: .relaxed).newValue == 1 {
            let line = "netdevd: \(error.description); further failures are counted, not printed\n"
            _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
    }
}
