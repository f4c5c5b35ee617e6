// A small MobiusCore program: a controller whose loop counts timer ticks, prints each model from a view, and
// stops cleanly on Ctrl-C (SIGINT) or after `--ticks N` ticks (default 10). `make run` runs it until the
// netdevd daemon exists.

import Dispatch
import Foundation
import MobiusCasePaths

struct Model: Equatable, Sendable {
    var ticks = 0
    var limit = 10
    var stopping = false
}

enum Event: Sendable {
    case tick
    case interrupted
}

@CasePathable
enum Effect: Equatable, Sendable {
    case report(String)
    case finish
}

let update = Update<Model, Event, Effect> { model, event in
    guard !model.stopping else { return .noChange }
    switch event {
    case .tick:
        var model = model
        model.ticks += 1
        if model.ticks >= model.limit {
            model.stopping = true
            return .next(model, effects: [.report("reached \(model.limit) ticks"), .finish])
        }
        return .next(model)
    case .interrupted:
        var model = model
        model.stopping = true
        return .next(model, effects: [.report("interrupted after \(model.ticks) ticks"), .finish])
    }
}

/// A dispatch source, which libdispatch lets any thread cancel; `@unchecked Sendable` for that reason alone.
final class Cancellable: @unchecked Sendable {
    private let source: any DispatchSourceProtocol

    init(_ source: any DispatchSourceProtocol) {
        self.source = source
    }

    func cancel() {
        source.cancel()
    }
}

/// Ticks every 200 ms on its own queue, for as long as the subscription lives.
final class Ticker: EventSource {
    func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "ticker"))
        timer.schedule(deadline: .now() + .milliseconds(200), repeating: .milliseconds(200))
        timer.setEventHandler { consumer(.tick) }
        timer.resume()
        let cancellable = Cancellable(timer)
        return AnonymousDisposable { cancellable.cancel() }
    }
}

/// Turns SIGINT into an event.
final class Interrupts: EventSource {
    func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue(label: "signals"))
        source.setEventHandler { consumer(.interrupted) }
        source.resume()
        let cancellable = Cancellable(source)
        return AnonymousDisposable { cancellable.cancel() }
    }
}

let limit = CommandLine.arguments.firstIndex(of: "--ticks").flatMap { index in
    CommandLine.arguments.dropFirst(index + 1).first.flatMap(Int.init)
}
let finished = DispatchSemaphore(value: 0)
let effects = EffectRouter<Effect, Event>()
    .routeCase(\.report).to { line in print("counter: \(line)") }
    .routeEffects(equalTo: .finish).to { _ in finished.signal() }
let controller = Mobius.loop(update: update, effectHandler: effects.asConnectable)
    .withEventSource(CompositeEventSourceBuilder<Event>().addEventSource(Ticker()).addEventSource(Interrupts()).build())
    .makeController(
        from: Model(limit: max(1, limit ?? 10)),
        loopQueue: DispatchQueue(label: "counter.loop"),
        viewQueue: DispatchQueue(label: "counter.view")
    )
controller.connectView(
    AnyConnectable<Model, Event> { _ in
        Connection(acceptClosure: { model in print("model: ticks=\(model.ticks)") }, disposeClosure: {})
    }
)
print("counter: counting to \(controller.model.limit); press Ctrl-C to stop early")
controller.start()
finished.wait()
controller.stop()
print("counter: stopped at \(controller.model.ticks) ticks")
