import Dispatch
import Testing

@testable import MobiusCore

@Suite("ChunkedQueue")
struct ChunkedQueueTests {
    /// A value of a session event's size (a few hundred bytes).
    struct Large {
        typealias Eight = (Int, Int, Int, Int, Int, Int, Int, Int)
        var id: Int
        var padding: (Eight, Eight, Eight, Eight, Eight) = (
            (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
            (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0)
        )
    }

    @Test("values come out in the order they went in, across many chunks")
    func order() {
        var queue = ChunkedQueue<Large>()
        for id in 0..<5_000 { queue.append(Large(id: id)) }
        var seen: [Int] = []
        queue.forEach { seen.append($0.id) }
        #expect(seen == Array(0..<5_000))
        #expect(queue.count == 5_000)
        #expect(queue.full.count > 1)
    }

    @Test("a batch of one costs about one value, and no chunk outgrows its byte budget (below malloc's mmap threshold)")
    func chunkSizes() {
        let stride = MemoryLayout<Large>.stride
        var queue = ChunkedQueue<Large>()
        queue.append(Large(id: 0))
        #expect(queue.tail.capacity * stride < 4 * stride)
        for id in 1..<5_000 { queue.append(Large(id: id)) }
        let budget = ChunkedQueue<Large>.chunkBytes + stride
        for chunk in queue.full {
            #expect(chunk.count == ChunkedQueue<Large>.chunkSize)
            #expect(chunk.capacity * stride <= budget)
        }
        #expect(queue.tail.capacity * stride <= budget)
    }

    @Test("an emptied queue keeps one chunk's storage for the next batch, and the next values come out in order")
    func keptStorage() {
        let stride = MemoryLayout<Large>.stride
        var queue = ChunkedQueue<Large>()
        for id in 0..<3 { queue.append(Large(id: id)) }
        let capacity = queue.tail.capacity
        queue.removeAll(keepingStorage: true)
        #expect(queue.isEmpty && queue.hasStorage)
        #expect(queue.tail.capacity == capacity)
        for id in 3..<6 { queue.append(Large(id: id)) }
        #expect(queue.tail.capacity == capacity)
        for id in 6..<5_000 { queue.append(Large(id: id)) }
        queue.removeAll(keepingStorage: true)
        #expect(queue.full.isEmpty && queue.count == 0)
        #expect(queue.tail.capacity * stride <= ChunkedQueue<Large>.chunkBytes + stride)
        for id in 0..<100 { queue.append(Large(id: id)) }
        var seen: [Int] = []
        queue.forEach { seen.append($0.id) }
        #expect(seen == Array(0..<100))
        queue.removeAll(keepingStorage: false)
        #expect(!queue.hasStorage)
    }

    @Test("a mailbox drained after every few values delivers them all in order and keeps its storage for the next")
    func mailboxKeepsStorage() {
        let queue = DispatchQueue(label: "mailbox-test")
        let mailbox = Mailbox<Large>(queue: queue)
        let seen = Recorder<Int>()
        mailbox.open { seen.record($0.id) }
        for id in 0..<1_000 {
            mailbox.post(Large(id: id))
            if id % 3 == 0 { queue.sync {} }
        }
        queue.sync {}
        #expect(seen.all == Array(0..<1_000))
        #expect(mailbox.state.withLock { $0.pending.isEmpty && $0.pending.hasStorage })
        // The same two storages (the queue's and the spare, which take turns), not copies of their capacity: an
        // array emptied while its storage is shared allocates anew.
        let storage = { mailbox.state.withLock { $0.pending.tail.withUnsafeBufferPointer { $0.baseAddress } } }
        let spare = { mailbox.state.withLock { $0.spare.tail.withUnsafeBufferPointer { $0.baseAddress } } }
        let kept = Set([storage(), spare()].compactMap { $0 })
        #expect(!kept.isEmpty)
        var moved = 0
        for id in 1_000..<1_100 {
            mailbox.post(Large(id: id))
            queue.sync {}
            if let now = storage(), !kept.contains(now) { moved += 1 }
        }
        #expect(moved == 0, "the mailbox's storage was allocated again after \(moved) of 100 batches")
        #expect(seen.all == Array(0..<1_100))
        mailbox.close()
        #expect(mailbox.state.withLock { !$0.pending.hasStorage })
    }

    @Test("values posted while a batch is delivered go into storage the mailbox kept, not into a queue grown anew")
    func mailboxKeepsStorageWhilePostedToDuringDelivery() {
        let queue = DispatchQueue(label: "mailbox-test")
        let mailbox = Mailbox<Large>(queue: queue, drainsUntilEmpty: true)
        let seen = Recorder<Int>()
        let withoutStorage = Recorder<Int>()
        mailbox.open { value in
            seen.record(value.id)
            // What the loop does in a burst: the consumer's work posts the next value before the batch is done.
            guard value.id % 2 == 0 else { return }
            if !mailbox.state.withLock({ $0.pending.hasStorage }) { withoutStorage.record(value.id) }
            mailbox.post(Large(id: value.id + 1))
        }
        for id in stride(from: 0, to: 200, by: 2) {
            mailbox.post(Large(id: id))
            queue.sync {}
        }
        #expect(seen.all == Array(0..<200))
        #expect(withoutStorage.all.count <= 1, "a new queue was grown in \(withoutStorage.all.count) of 100 batches")
        mailbox.close()
        #expect(mailbox.state.withLock { !$0.pending.hasStorage && !$0.spare.hasStorage })
    }
}
