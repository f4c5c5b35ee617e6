/// A FIFO queue on a growable circular buffer: O(1) append and removal at the front, no reallocation once it has
/// grown to the high-water mark of its use.
@usableFromInline
struct RingBuffer<Element> {
    @usableFromInline var storage: ContiguousArray<Element?> = []
    @usableFromInline var head = 0
    @usableFromInline var count = 0

    @inlinable
    init() {}

    @inlinable
    var isEmpty: Bool { count == 0 }

    @inlinable
    mutating func append(_ element: Element) {
        if count == storage.count {
            grow()
        }
        var tail = head + count
        if tail >= storage.count {
            tail -= storage.count
        }
        storage[tail] = element
        count += 1
    }

    @inlinable
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head].take()
        head += 1
        if head == storage.count {
            head = 0
        }
        count -= 1
        return element
    }

    @inlinable
    mutating func removeAll() {
        while popFirst() != nil {}
        head = 0
    }

    @usableFromInline
    mutating func grow() {
        let newCapacity = Swift.max(16, storage.count * 2)
        var grown = ContiguousArray<Element?>()
        grown.reserveCapacity(newCapacity)
        while let element = popFirst() {
            grown.append(element)
        }
        count = grown.count
        grown.append(contentsOf: repeatElement(nil, count: newCapacity - grown.count))
        storage = grown
        head = 0
    }
}

extension RingBuffer: Sendable where Element: Sendable {}
