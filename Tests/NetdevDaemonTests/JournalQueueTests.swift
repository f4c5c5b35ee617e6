import Dispatch
import Foundation
import Locking
import Systemd
import Testing

@testable import NetdevDaemon

@Suite("Journal queue")
struct JournalQueueTests {
    @Test("a blocked journal holds at most the limit; the rest are counted and said once the writer moves again")
    func boundedWhileBlocked() {
        let written = Locked<[String]>([])
        let writing = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let queue = JournalQueue(limit: 10) { item, _ in
            guard case .made(let entry) = item else { return }
            let message = entry.value(of: .message) ?? ""
            if message == "0" {
                // journald stops taking entries while the first is written.
                writing.signal()
                release.wait()
            }
            written.withLock { $0.append(message) }
        }
        queue.append(JournalEntry(message: "0"))
        writing.wait()
        for number in 1...100 { queue.append(JournalEntry(message: String(number))) }
        release.signal()
        queue.drain()
        let messages = written.withLock { $0 }
        #expect(Array(messages.prefix(11)) == (0...10).map(String.init))
        #expect(messages.count == 12)
        #expect(
            messages.last
                == "90 journal entries were dropped: they came while 10 waited for the journal, which took none for a "
                + "while. netdevd's state is unaffected: netdevctl shows it")
        // Moving again, it keeps everything.
        for number in 101...105 { queue.append(JournalEntry(message: String(number))) }
        queue.drain()
        #expect(written.withLock { Array($0.suffix(5)) } == (101...105).map(String.init))
    }
}
