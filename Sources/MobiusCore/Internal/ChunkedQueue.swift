/// A FIFO of values stored in fixed-size chunks, for a mailbox whose backlog can grow large under a flood.
///
/// Appending never copies what is already queued (a growing array would, and would keep its doubled capacity), and
/// every allocation is one chunk of the same size, which the allocator hands back and reuses; so the memory a
/// backlog takes is close to the size of the values in it, and is returned when the backlog is drained.
@usableFromInline
struct ChunkedQueue<Value> {
    @usableFromInline static var chunkSize: Int { 1024 }

    @usableFromInline var full: [ContiguousArray<Value>] = []
    @usableFromInline var tail = ContiguousArray<Value>()

    @inlinable
    init() {}

    @inlinable
    var isEmpty: Bool {
        tail.isEmpty && full.isEmpty
    }

    @inlinable
    mutating func append(_ value: Value) {
        if tail.count == Self.chunkSize {
            full.append(tail)
            tail = ContiguousArray()
        }
        if tail.isEmpty {
            tail.reserveCapacity(Self.chunkSize)
        }
        tail.append(value)
    }

    /// Calls `body` on every value, oldest first.
    @inlinable
    func forEach(_ body: (Value) -> Void) {
        for chunk in full {
            for value in chunk {
                body(value)
            }
        }
        for value in tail {
            body(value)
        }
    }
}

extension ChunkedQueue: Sendable where Value: Sendable {}
