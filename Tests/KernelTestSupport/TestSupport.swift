import Foundation

/// A deterministic random generator (SplitMix64), so a failing randomised test reproduces from its seed.
public struct SeededGenerator: RandomNumberGenerator {
    /// The state.
    public var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next value.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// A value behind an `NSLock`, which ThreadSanitizer understands (a contended `Synchronization.Mutex` on Linux is
/// taken inside the kernel, out of its sight). `@unchecked Sendable`: `value` is touched only under `lock`.
public final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A protected `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
