public import Synchronization

/// A thread-safe flag that goes from unset to set once.
@usableFromInline
final class AtomicFlag: Sendable {
    @usableFromInline let value = Atomic<Bool>(false)

    @usableFromInline
    init() {}

    @inlinable
    var isSet: Bool {
        value.load(ordering: .acquiring)
    }

    /// Sets the flag; returns `true` for the caller that set it first.
    @inlinable
    @discardableResult
    func set() -> Bool {
        !value.exchange(true, ordering: .acquiringAndReleasing)
    }
}
