public import Dispatch
public import Locking

/// Carries values from any thread to one consumer on a dispatch queue, in FIFO order, one queued block per batch.
///
/// A flood of values costs one `async` per batch rather than one per value, and the backlog is kept in chunks of at
/// most 16 KiB (``ChunkedQueue``), so memory grows by the size of the values alone and the receiving queue stays free for other work
/// between batches. A delivered batch's storage is kept (one chunk's, for the values posted next and a spare for those
/// posted while the next batch is delivered), so a steady flow allocates nothing per batch. One batch is delivered at a
/// time, so the consumer is never called concurrently, even on a concurrent queue.
///
/// A mailbox starts closed to delivery: values posted before `open(deliver:)` are held and delivered first.
/// After `close()` everything pending or posted later is dropped.
@usableFromInline
final class Mailbox<Value: Sendable>: Sendable {
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var pending = ChunkedQueue<Value>()
        /// Emptied storage for `pending` once the batch is taken: a batch's storage that could not go back to
        /// `pending` (values were posted while it was delivered) waits here, so that posts during the next batch
        /// fill storage already made instead of growing a new queue from one value.
        @usableFromInline var spare = ChunkedQueue<Value>()
        @usableFromInline var deliver: (@Sendable (Value) -> Void)?
        @usableFromInline var scheduled = false
        @usableFromInline var closed = false

        @usableFromInline
        init() {}
    }

    @usableFromInline let queue: DispatchQueue
    @usableFromInline let drainsUntilEmpty: Bool
    @usableFromInline let state = Locked(State())
    @usableFromInline let closed = AtomicFlag()

    /// A mailbox delivering on `queue`. With `drainsUntilEmpty`, one queued block keeps delivering until nothing
    /// is pending, so that work queued on `queue` meanwhile (an effect routed there) runs after the values posted
    /// before it; without, it delivers one batch per block, leaving the queue to other work between batches.
    @usableFromInline
    init(queue: DispatchQueue, drainsUntilEmpty: Bool = false) {
        self.queue = queue
        self.drainsUntilEmpty = drainsUntilEmpty
    }

    /// Starts delivering to `deliver`, values held so far first.
    @inlinable
    func open(deliver: @escaping @Sendable (Value) -> Void) {
        let schedule = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.deliver = deliver
            return scheduleIfNeeded(&state)
        }
        if schedule {
            queue.async { self.drainOneBatch() }
        }
    }

    /// Queues `value` for delivery; dropped when the mailbox is closed.
    @inlinable
    func post(_ value: Value) {
        let schedule = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.pending.append(value)
            return scheduleIfNeeded(&state)
        }
        if schedule {
            queue.async { self.drainOneBatch() }
        }
    }

    /// Drops what is pending and refuses what comes later. Idempotent.
    @inlinable
    func close() {
        closed.set()
        state.withLock { state in
            state.closed = true
            state.pending = ChunkedQueue()
            state.spare = ChunkedQueue()
            state.deliver = nil
        }
    }

    @inlinable
    func scheduleIfNeeded(_ state: inout State) -> Bool {
        guard !state.scheduled, state.deliver != nil, !state.pending.isEmpty else { return false }
        state.scheduled = true
        return true
    }

    @inlinable
    func drainOneBatch() {
        while true {
            // The batch is swapped out, never copied: a copy would share its storage, and an array emptied while
            // its storage is shared allocates new storage instead of keeping it.
            var batch = ChunkedQueue<Value>()
            let deliver = state.withLock { state -> (@Sendable (Value) -> Void)? in
                guard let deliver = state.deliver, !state.closed else {
                    state.scheduled = false
                    return nil
                }
                swap(&batch, &state.spare)
                swap(&batch, &state.pending)
                return deliver
            }
            guard let deliver else { return }
            batch.forEach { value in
                if !closed.isSet {
                    deliver(value)
                }
            }
            // The values are destroyed here, outside the lock; their storage goes back for the next batch.
            batch.removeAll(keepingStorage: true)
            let again = state.withLock { state -> Bool in
                if !state.closed && state.pending.isEmpty && !state.pending.hasStorage {
                    swap(&state.pending, &batch)
                } else if !state.closed && !state.spare.hasStorage {
                    swap(&state.spare, &batch)
                }
                guard !state.closed, !state.pending.isEmpty else {
                    state.scheduled = false
                    return false
                }
                return true
            }
            guard again else { return }
            if !drainsUntilEmpty {
                queue.async { self.drainOneBatch() }
                return
            }
        }
    }
}
