/// A FIFO of values stored in chunks of at most ``chunkBytes`` bytes (or 16 values of a type larger than a
/// kibibyte), for a mailbox whose backlog can grow large under a flood.
///
/// Appending never copies what is already queued beyond the chunk being filled (a growing array would copy the
/// whole backlog, and would keep its doubled capacity), so the memory a backlog takes is close to the size of the
/// values in it, and is returned when the backlog is drained (all but one chunk's storage, kept for the next
/// batch). The first chunk grows with what is appended (a batch of one value costs an allocation of one value's
/// size); once one chunk is full, a flood is on and the next chunks are made at their full size. A chunk stays below
/// glibc's mmap threshold: a chunk of 1,024 events of a few hundred bytes each was made and freed for every batch,
/// and glibc moved the top of its heap (two `brk` calls and the page faults in between) each time.
@usableFromInline
struct ChunkedQueue<Value> {
    /// The most bytes one chunk takes.
    @usableFromInline static var chunkBytes: Int { 16_384 }

    /// The most values in one chunk: as many as fit in ``chunkBytes``, between 16 and 1,024.
    @usableFromInline static var chunkSize: Int {
        Swift.min(1_024, Swift.max(16, chunkBytes / MemoryLayout<Value>.stride))
    }

    @usableFromInline var full: [ContiguousArray<Value>] = []
    @usableFromInline var tail = ContiguousArray<Value>()

    @inlinable
    init() {}

    @inlinable
    var isEmpty: Bool {
        tail.isEmpty && full.isEmpty
    }

    /// How many values are queued.
    @inlinable
    var count: Int {
        full.reduce(tail.count) { $0 + $1.count }
    }

    @inlinable
    mutating func append(_ value: Value) {
        if tail.count >= Self.chunkSize {
            full.append(tail)
            tail = ContiguousArray()
            tail.reserveCapacity(Self.chunkSize)
        } else if tail.count == tail.capacity {
            // Doubling, but never past a chunk (an array's own growth would).
            tail.reserveCapacity(Swift.min(Self.chunkSize, Swift.max(1, tail.count * 2)))
        }
        tail.append(value)
    }

    /// Whether the queue holds storage for values (an emptied queue may, for the next batch).
    @inlinable
    var hasStorage: Bool {
        tail.capacity > 0
    }

    /// Empties the queue, destroying its values. With `keepingStorage`, the last chunk's storage (at most
    /// ``chunkBytes``) stays for the next values: a mailbox drained after every few values then allocates nothing
    /// for the next few. Each such allocation went through glibc's slow path on a heap a burst had fragmented (a
    /// session model is 632 bytes, so two of them make a request over a kibibyte, and a request that large first
    /// merges every small chunk freed since the last), 3% of netdevd's loop thread while 20,000 links were deleted.
    @inlinable
    mutating func removeAll(keepingStorage: Bool) {
        full = []
        tail.removeAll(keepingCapacity: keepingStorage)
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
