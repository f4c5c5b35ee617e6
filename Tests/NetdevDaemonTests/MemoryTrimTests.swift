import Dispatch
import Foundation
import Locking
import Testing

@testable import NetdevDaemon

/// The heap is given back a quiet spell after the last activity, on the loop's queue or on another (the monitors'
/// sends, the clients' replies), once more after the pool's threads have ended, and not again until something
/// happens.
@Suite("Giving a burst's memory back")
struct MemoryTrimTests {
    /// A trim on its own queue whose trims are recorded (``PollerTimer/now()`` of each).
    struct Subject {
        let queue = DispatchQueue(label: "memory-trim-test")
        let trims = Locked<[UInt64]>([])
        let trim: MemoryTrim

        init(quiet: UInt64, poolThreadsEnded: UInt64) {
            let trims = trims
            trim = MemoryTrim(queue: queue, quiet: quiet, poolThreadsEnded: poolThreadsEnded) {
                trims.withLock { $0.append(PollerTimer.now()) }
            }
        }

        var count: Int { trims.withLock { $0.count } }

        /// Waits until `count` trims were made, up to `seconds`; whether they were.
        func wait(for count: Int, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while self.count < count && Date() < deadline { usleep(5_000) }
            return self.count >= count
        }
    }

    @Test("notes from another queue keep the trim waiting while they come, and it comes a quiet spell after the last")
    func notesElsewhereHoldTheTrim() throws {
        let quiet: UInt64 = 1_000_000_000
        let subject = Subject(quiet: quiet, poolThreadsEnded: 60_000_000_000)
        subject.queue.sync { subject.trim.noteActivity() }
        // Notes every 50 ms for 2.5 s: more than twice the quiet spell, so a trim that did not see them comes early.
        let end = PollerTimer.now() + 2_500_000_000
        var last: UInt64 = 0
        while PollerTimer.now() < end {
            last = PollerTimer.now()
            subject.trim.noteActivityElsewhere()
            usleep(50_000)
        }
        #expect(subject.count == 0, "trimmed while notes came from another queue")
        try #require(subject.wait(for: 1, seconds: 5), "no trim after the notes stopped")
        let at = try #require(subject.trims.withLock { $0.first })
        #expect(at >= last + quiet, "trimmed \((last + quiet - at) / 1_000_000) ms before a quiet spell had passed")
    }

    @Test("a quiet spell brings a trim and one more later, then none until a note from another queue arms it again")
    func followUpThenRearm() throws {
        let subject = Subject(quiet: 100_000_000, poolThreadsEnded: 300_000_000)
        subject.queue.sync { subject.trim.noteActivity() }
        try #require(subject.wait(for: 2, seconds: 5), "\(subject.count) trims after a burst, not 2")
        let times = subject.trims.withLock { $0 }
        #expect(times[1] - times[0] >= 300_000_000, "the second trim came before the pool's threads had ended")
        usleep(1_000_000)
        #expect(subject.count == 2, "trimmed again with nothing happening")
        subject.trim.noteActivityElsewhere()
        #expect(subject.wait(for: 3, seconds: 5), "a note from another queue after the trims armed no trim")
    }
}
