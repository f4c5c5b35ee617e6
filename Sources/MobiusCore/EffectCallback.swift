/// How an effect handler reports back: events with `send`, completion with `end`.
///
/// Contract: after `end()` (or the loop disconnecting the handler, or the callback's release) the callback is
/// *ended*: `send` does nothing and `end` runs its end action only the first time. All methods are thread-safe; the
/// state is one atomic flag, not a queue per callback.
public final class EffectCallback<Output>: Sendable {
    @usableFromInline let onSendClosure: @Sendable (Output) -> Void
    @usableFromInline let onEndClosure: @Sendable () -> Void
    @usableFromInline let endedFlag = AtomicFlag()

    /// A callback that forwards sent values to `onSend` and runs `onEnd` once when ended.
    public init(onSend: @escaping @Sendable (Output) -> Void, onEnd: @escaping @Sendable () -> Void) {
        onSendClosure = onSend
        onEndClosure = onEnd
    }

    /// `true` once the callback has ended; sends are ignored from then on.
    @inlinable
    public var ended: Bool {
        endedFlag.isSet
    }

    /// Sends `output` to the loop, unless the callback has ended.
    @inlinable
    public func send(_ output: Output) {
        guard !endedFlag.isSet else { return }
        onSendClosure(output)
    }

    /// Marks the handling as finished. Only the first call has an effect.
    @inlinable
    public func end() {
        if endedFlag.set() {
            onEndClosure()
        }
    }

    /// Sends `outputs`, in order, then ends.
    public func end(with outputs: Output...) {
        end(with: outputs)
    }

    /// Sends `outputs`, in order, then ends.
    public func end(with outputs: [Output]) {
        for output in outputs {
            send(output)
        }
        end()
    }

    /// A callback released without being ended ends now, as in Mobius.swift: its end action runs, so whoever waits
    /// for the handling to finish is not left waiting.
    deinit {
        end()
    }
}
