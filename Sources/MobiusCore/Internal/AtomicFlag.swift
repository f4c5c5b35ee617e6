import Synchronization

/// A thread-safe flag that goes from unset to set once.
final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    init() {}

    var isSet: Bool {
        value.load(ordering: .acquiring)
    }

    /// Sets the flag; returns `true` for the caller that set it first.
    @discardableResult
    func set() -> Bool {
        !value.exchange(true, ordering: .acquiringAndReleasing)
    }
}
