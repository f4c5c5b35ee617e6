import Dispatch
import Foundation
import Locking
import NetdevSession
import Systemd
import Testing

@testable import NetdevDaemon

@Suite("Journal queue", .serialized)
struct JournalQueueTests {
    /// The threads of this process named as the journal's writer.
    static func writerThreads() -> Set<String> {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return Set(
            tasks.filter {
                (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) == "netdevd-journal\n"
            })
    }

    @Test(
        "entries from several threads all arrive, each thread's in order, on one writer thread that ends with the queue"
    )
    func writerThread() {
        // Another test's writer may still be ending: this queue's thread is the one that appears.
        let before = Self.writerThreads()
        var own: Set<String> = []
        // In a scope of its own: the queue is gone at its end.
        do {
            let written = Locked<[String]>([])
            let queue = JournalQueue { item, _ in
                guard case .made(let entry) = item else { return }
                written.withLock { $0.append(entry.value(of: .message) ?? "") }
            }
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for number in 0..<1_000 { queue.append(JournalEntry(message: "\(thread) \(number)")) }
            }
            queue.drain()
            let messages = written.withLock { $0 }
            #expect(messages.count == 4_000)
            for thread in 0..<4 {
                let fromThread = messages.filter { $0.hasPrefix("\(thread) ") }
                #expect(fromThread == (0..<1_000).map { "\(thread) \($0)" })
            }
            own = Self.writerThreads().subtracting(before)
            #expect(own.count == 1)
        }
        let deadline = Date().addingTimeInterval(5)
        while !Self.writerThreads().isDisjoint(with: own) && Date() < deadline { usleep(1_000) }
        #expect(Self.writerThreads().isDisjoint(with: own), "the writer thread outlived its queue")
    }

    @Test("without a thread of its own, entries are written in order, never by an append, all by drain")
    func threadless() {
        let before = Self.writerThreads()
        let written = Locked<[String]>([])
        // The threads inside `append` now, and the writes made by one of them (the loop must never write).
        let appending = Locked<Set<UInt>>([])
        let writesInAppend = Locked(0)
        @Sendable func current() -> UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }
        let queue = JournalQueue(startsThread: false) { item, _ in
            guard case .made(let entry) = item else { return }
            if appending.withLock({ $0.contains(current()) }) { writesInAppend.withLock { $0 += 1 } }
            // Slow now and then, so that appends find the writer busy and queue behind it.
            if written.withLock({ $0.count }) % 500 == 0 { usleep(2_000) }
            written.withLock { $0.append(entry.value(of: .message) ?? "") }
        }
        // A subset: another test's writer may still be ending.
        #expect(Self.writerThreads().isSubset(of: before), "no writer thread was made")
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for number in 0..<1_000 {
                appending.withLock { _ = $0.insert(current()) }
                queue.append(JournalEntry(message: "\(thread) \(number)"))
                appending.withLock { _ = $0.remove(current()) }
            }
        }
        queue.drain()
        let messages = written.withLock { $0 }
        #expect(messages.count == 4_000)
        for thread in 0..<4 {
            #expect(messages.filter { $0.hasPrefix("\(thread) ") } == (0..<1_000).map { "\(thread) \($0)" })
        }
        #expect(writesInAppend.withLock { $0 } == 0, "an append wrote")
    }

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

    /// A queue writing session entries (their messages) to `written`, woken after `loop`'s work.
    static func sessionQueue(loop: DispatchQueue, written: Locked<[String]>) -> JournalQueue {
        JournalQueue(loopQueue: loop) { item, _ in
            guard case .session(let entry) = item else { return }
            written.withLock { $0.append(entry.message) }
        }
    }

    static func entry(_ number: Int) -> LogEntry {
        LogEntry(priority: .info, message: String(number), kind: .linkAdded)
    }

    @Test("the entries the loop makes in one pass are written once the pass is over, all of them, in order")
    func wokenAfterThePass() {
        let loop = DispatchQueue(label: "netdevd.test.loop")
        let written = Locked<[String]>([])
        let queue = Self.sessionQueue(loop: loop, written: written)
        let writtenDuringPass = loop.sync { () -> Int in
            // Slow enough that a writer woken at the first entry writes some before the pass ends.
            for number in 0..<100 {
                queue.append(Self.entry(number))
                usleep(200)
            }
            usleep(50_000)
            return written.withLock { $0.count }
        }
        #expect(writtenDuringPass == 0, "the writer was woken before the loop's pass ended")
        // Woken by the block the first entry queued behind the pass: no drain needed.
        let deadline = Date().addingTimeInterval(5)
        while written.withLock({ $0.count }) < 100 && Date() < deadline { usleep(1_000) }
        #expect(written.withLock { $0 } == (0..<100).map(String.init))
    }

    @Test("a pass that makes more entries than are gathered has them written while it goes on, none dropped")
    func longPass() {
        let loop = DispatchQueue(label: "netdevd.test.loop")
        let written = Locked<[String]>([])
        let queue = Self.sessionQueue(loop: loop, written: written)
        let count = JournalQueue.gathered * 4
        let writtenDuringPass = loop.sync { () -> Int in
            for number in 0..<count { queue.append(Self.entry(number)) }
            let deadline = Date().addingTimeInterval(5)
            while written.withLock({ $0.isEmpty }) && Date() < deadline { usleep(1_000) }
            return written.withLock { $0.count }
        }
        #expect(writtenDuringPass >= JournalQueue.gathered)
        queue.drain()
        #expect(written.withLock { $0 } == (0..<count).map(String.init))
    }

    @Test("a drain on the loop's queue writes what that pass made, though the writer's wake-up waits behind it")
    func drainOnTheLoop() {
        let loop = DispatchQueue(label: "netdevd.test.loop")
        let written = Locked<[String]>([])
        let queue = Self.sessionQueue(loop: loop, written: written)
        // Waited for with a bound: a drain that waits for the block behind it never returns, and fails here.
        let writtenByDrain = Locked<[String]?>(nil)
        let drained = DispatchSemaphore(value: 0)
        loop.async {
            for number in 0..<3 { queue.append(Self.entry(number)) }
            queue.drain()
            writtenByDrain.withLock { $0 = written.withLock { $0 } }
            drained.signal()
        }
        #expect(drained.wait(timeout: .now() + 10) == .success, "a drain on the loop's queue never returned")
        #expect(writtenByDrain.withLock { $0 } == ["0", "1", "2"])
    }
}
