/// Async targets, beyond the reference: each matching effect runs the closure in its own `Task`. Disposing the
/// router's connection (the loop stopping) cancels every task still running, and an event a cancelled task
/// returns is dropped.
extension _PartialEffectRouter where EffectParameters: Sendable {
    /// Runs `body` in a task for each matching effect and sends the event it returns, if any.
    @inlinable
    public func to(_ body: @escaping @Sendable (EffectParameters) async -> Event?) -> EffectRouter<Effect, Event> {
        finishAsync(body)
    }

    /// Runs `body` in a task for each matching effect.
    @inlinable
    public func to(_ body: @escaping @Sendable (EffectParameters) async -> Void) -> EffectRouter<Effect, Event> {
        finishAsync { parameters -> Event? in
            await body(parameters)
            return nil
        }
    }

    @inlinable
    func finishAsync(
        _ body: @escaping @Sendable (EffectParameters) async -> Event?
    ) -> EffectRouter<Effect, Event> {
        to { parameters, callback in
            let task = Task {
                let event = await body(parameters)
                if let event, !Task.isCancelled {
                    callback.end(with: event)
                } else {
                    callback.end()
                }
            }
            return AnonymousDisposable { task.cancel() }
        }
    }
}
