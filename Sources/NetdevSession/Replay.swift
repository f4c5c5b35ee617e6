/// One step of a replay: the event, and the model and effects it produced.
public struct ReplayStep: Sendable, Equatable {
    /// The event.
    public var event: Event
    /// The model after it.
    public var model: Model
    /// The effects it produced.
    public var effects: [Effect]
}

extension Session {
    /// Runs `events` through ``update(_:_:)`` from `model`, step by step: a recorded stream (netdevd's
    /// `--record`) replays to the same models and effects every time.
    public static func replay(events: [Event], from model: Model) -> [ReplayStep] {
        var current = model
        var steps: [ReplayStep] = []
        steps.reserveCapacity(events.count)
        for event in events {
            let next = update(current, event)
            current = next.model ?? current
            steps.append(ReplayStep(event: event, model: current, effects: next.effects))
        }
        return steps
    }
}
