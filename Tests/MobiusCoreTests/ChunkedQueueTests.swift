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
}
