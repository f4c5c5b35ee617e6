import Dispatch
import Foundation
import KernelTestSupport
import MobiusCore
import Synchronization
import Testing

/// An effect handler whose behaviour the test decides, recording every effect it is given.
private func handler<Effect: Sendable, Event: Sendable>(
    _ onEffect: @escaping @Sendable (Effect, Consumer<Event>) -> Void
) -> AnyConnectable<Effect, Event> {
    AnyConnectable { consumer in
        Connection(acceptClosure: { effect in onEffect(effect, consumer) }, disposeClosure: {})
    }
}

/// An event source whose consumer the test holds, to send events whenever it likes.
private final class ManualEventSource<Event: Sendable>: EventSource, Sendable {
    private let consumer = Protected<Consumer<Event>?>(nil)
    private let onSubscribe: @Sendable (Consumer<Event>) -> Void

    init(onSubscribe: @escaping @Sendable (Consumer<Event>) -> Void = { _ in }) {
        self.onSubscribe = onSubscribe
    }

    func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        self.consumer.withLock { $0 = consumer }
        onSubscribe(consumer)
        return AnonymousDisposable { self.consumer.withLock { $0 = nil } }
    }

    func send(_ event: Event) {
        consumer.withLock { $0 }?(event)
    }

    var subscribed: Bool {
        consumer.withLock { $0 != nil }
    }
}

@Suite("MobiusLoop")
struct MobiusLoopTests {
    @Test("update is never re-entered: an event sent from an effect waits for the current update to finish")
    func nonReentrant() {
        let trace = Recorder<String>()
        let loop = Mobius.loop(
            update: { (model: Int, event: String) -> Next<Int, String> in
                trace.record("enter \(event)")
                defer { trace.record("exit \(event)") }
                return event == "a" ? .next(model + 1, effects: ["send b", "send c"]) : .next(model + 1)
            },
            effectHandler: handler { (effect: String, consumer: Consumer<String>) in
                trace.record("effect \(effect)")
                consumer(String(effect.dropFirst(5)))
                trace.record("sent \(effect.dropFirst(5))")
            }
        ).start(from: 0)
        loop.dispatchEvent("a")
        #expect(
            trace.all == [
                "enter a", "exit a",
                "effect send b", "sent b",
                "effect send c", "sent c",
                "enter b", "exit b",
                "enter c", "exit c",
            ]
        )
        #expect(loop.latestModel == 3)
    }

    @Test("events queued during processing are handled in the order they were sent (FIFO)")
    func fifo() {
        let processed = Recorder<Int>()
        let loop = Mobius.loop(
            update: { (_: Int, event: Int) -> Next<Int, Int> in
                processed.record(event)
                return event == 0 ? .next(event, effects: Array(1...50)) : .next(event)
            },
            effectHandler: handler { (effect: Int, consumer: Consumer<Int>) in consumer(effect * 100) }
        ).start(from: -1)
        let observerSent = AtomicCounter()
        loop.addObserver { model in
            if model == 0, observerSent.increment() == 1 {
                loop.unguardedDispatchEvent(7)
            }
        }
        loop.dispatchEvent(0)
        #expect(processed.all == [0, 7] + (1...50).map { $0 * 100 })
    }

    @Test("a new model reaches observers before that event's effects are dispatched")
    func modelBeforeEffects() {
        let seenByHandler = Recorder<Int>()
        let box = LoopBox<Int, Int, Int>()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Int> in .next(model + event, effects: [event]) },
            effectHandler: handler { (_: Int, _: Consumer<Int>) in seenByHandler.record(box.loop!.latestModel) }
        ).start(from: 0)
        box.loop = loop
        let observed = Recorder<Int>()
        loop.addObserver { observed.record($0) }
        loop.dispatchEvent(5)
        loop.dispatchEvent(2)
        #expect(seenByHandler.all == [5, 7])
        #expect(observed.all == [0, 5, 7])
    }

    @Test("an observer receives the current model at once, and no model when update returns none")
    func observers() {
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in event == 0 ? .noChange : .next(model + event) },
            effectHandler: handler { (_: Never, _: Consumer<Int>) in }
        ).start(from: 10)
        let observed = Recorder<Int>()
        let subscription = loop.addObserver { observed.record($0) }
        #expect(observed.all == [10])
        loop.dispatchEvent(0)
        loop.dispatchEvent(1)
        subscription.dispose()
        loop.dispatchEvent(1)
        #expect(observed.all == [10, 11])
        #expect(loop.latestModel == 12)
    }

    @Test("events emitted while the loop is built wait for the first model and the first effects")
    func eventsDuringStart() {
        let trace = Recorder<String>()
        let source = ManualEventSource<String> { consumer in consumer("from source") }
        let loop = Mobius.loop(
            update: { (model: [String], event: String) -> Next<[String], String> in
                trace.record("update \(event)")
                return .next(model + [event])
            },
            effectHandler: handler { (effect: String, consumer: Consumer<String>) in
                trace.record("effect \(effect)")
                consumer("from \(effect)")
            }
        )
        .withEventSource(source)
        .start(from: [], effects: ["first"])
        #expect(trace.all == ["effect first", "update from source", "update from first"])
        #expect(loop.latestModel == ["from source", "from first"])
    }

    @Test("a connectable event source receives the first model and every new one")
    func connectableEventSource() {
        let models = Recorder<Int>()
        let source = AnyConnectable<Int, Int> { consumer in
            Connection(
                acceptClosure: { model in
                    models.record(model)
                    if model == 1 { consumer(10) }
                },
                disposeClosure: {}
            )
        }
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model + event) },
            effectHandler: handler { (_: Never, _: Consumer<Int>) in }
        )
        .withEventSource(source)
        .start(from: 0)
        loop.dispatchEvent(1)
        #expect(models.all == [0, 1, 11])
    }

    @Test("dispose is idempotent, unsubscribes sources and drops later events from handlers")
    func dispose() {
        let source = ManualEventSource<Int>()
        let heldConsumer = Protected<Consumer<Int>?>(nil)
        let disposals = AtomicCounter()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Int> in .next(model + event, effects: [event]) },
            effectHandler: AnyConnectable<Int, Int> { consumer in
                heldConsumer.withLock { $0 = consumer }
                return Connection(acceptClosure: { _ in }, disposeClosure: { _ = disposals.increment() })
            }
        )
        .withEventSource(source)
        .start(from: 0)
        #expect(source.subscribed)
        loop.dispatchEvent(1)
        loop.dispose()
        loop.dispose()
        #expect(!source.subscribed)
        #expect(disposals.value == 1)
        heldConsumer.withLock { $0 }?(100)
        #expect(loop.latestModel == 1)
        #expect(String(reflecting: loop).hasPrefix("disposed MobiusLoop"))
    }

    @Test("the logger sees every update with its inputs and result")
    func logger() {
        let log = Recorder<String>()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model + event) },
            effectHandler: handler { (_: Never, _: Consumer<Int>) in }
        )
        .withLogger(TraceLogger(log: log))
        .start(from: 0)
        loop.dispatchEvent(2)
        #expect(log.all == ["will 0 + 2", "did 0 + 2 -> (2, [])"])
    }

    @Test("event consumer transformers wrap one another in the order given")
    func transformers() {
        let trace = Recorder<String>()
        let source = ManualEventSource<Int>()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model * 10 + event) },
            effectHandler: handler { (_: Never, _: Consumer<Int>) in }
        )
        .withEventSource(source)
        .withEventConsumerTransformer { consumer in
            {
                trace.record("first \($0)"); consumer($0 + 1)
            }
        }
        .withEventConsumerTransformer { consumer in
            {
                trace.record("second \($0)"); consumer($0 + 1)
            }
        }
        .start(from: 0)
        source.send(1)
        #expect(trace.all == ["second 1", "first 2"])
        #expect(loop.latestModel == 3)
    }

    @Test("events from many threads are all processed, never two updates at once")
    func concurrentDispatch() async {
        let inside = AtomicCounter()
        let overlaps = AtomicCounter()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in
                if inside.increment() != 1 { _ = overlaps.increment() }
                defer { _ = inside.decrement() }
                return .next(model + event)
            },
            effectHandler: handler { (_: Never, _: Consumer<Int>) in }
        ).start(from: 0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<5_000 {
                loop.dispatchEvent(1)
            }
        }
        #expect(loop.latestModel == 20_000)
        #expect(overlaps.value == 0)
    }

    @Test("dispatching to a disposed loop is reported as misuse")
    func dispatchAfterDispose() {
        let message = misuseMessage {
            let loop = Mobius.loop(
                update: { (model: Int, event: Int) -> Next<Int, Never> in .next(event) },
                effectHandler: handler { (_: Never, _: Consumer<Int>) in }
            ).start(from: 0)
            loop.dispose()
            loop.dispatchEvent(1)
        }
        #expect(message?.contains("cannot accept events when disposed") == true)
    }
}

/// A counter that threads can bump; `increment` and `decrement` return the new value.
final class AtomicCounter: Sendable {
    private let storage = Atomic<Int>(0)

    func increment() -> Int { storage.add(1, ordering: .sequentiallyConsistent).newValue }
    func decrement() -> Int { storage.subtract(1, ordering: .sequentiallyConsistent).newValue }
    var value: Int { storage.load(ordering: .sequentiallyConsistent) }
}

/// Lets an effect handler reach the loop it belongs to, which exists only after the handler is built.
final class LoopBox<Model: Sendable, Event: Sendable, Effect: Sendable>: Sendable {
    private let storage = Protected<MobiusLoop<Model, Event, Effect>?>(nil)

    var loop: MobiusLoop<Model, Event, Effect>? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

private struct TraceLogger: MobiusLogger {
    let log: Recorder<String>

    func willUpdate(model: Int, event: Int) { log.record("will \(model) + \(event)") }
    func didUpdate(model: Int, event: Int, next: Next<Int, Never>) {
        log.record("did \(model) + \(event) -> \(String(reflecting: next))")
    }
    func willInitiate(model: Int) { log.record("willInitiate \(model)") }
    func didInitiate(model: Int, first: First<Int, Never>) { log.record("didInitiate \(model)") }
}

/// A model that counts how many of its instances are alive, to catch a loop that is never released.
final class TrackedModel: Sendable {
    static let alive = AtomicCounter()
    let value: Int

    init(_ value: Int) {
        self.value = value
        _ = Self.alive.increment()
    }

    deinit {
        _ = Self.alive.decrement()
    }
}

@Suite("MobiusLoop memory", .serialized)
struct MobiusLoopMemoryTests {
    @Test("a disposed loop, its effect handlers and its models are released")
    func releasedAfterDispose() {
        do {
            let router = EffectRouter<Int, Int>()
                .routeEffects(withParameters: { $0 }).toEvent { $0 > 0 ? $0 - 1 : nil }
            let loop = Mobius.loop(
                update: { (model: TrackedModel, event: Int) -> Next<TrackedModel, Int> in
                    .next(TrackedModel(model.value + event), effects: [event])
                },
                effectHandler: router.asConnectable
            ).start(from: TrackedModel(0))
            loop.dispatchEvent(3)
            #expect(loop.latestModel.value == 6)
            loop.dispose()
        }
        #expect(TrackedModel.alive.value == 0)
    }
}

extension MobiusLoopMemoryTests {
    @Test("a stopped and released controller releases its loop, views' models and handlers")
    func controllerReleased() {
        let loopQueue = DispatchQueue(label: "loop")
        let viewQueue = DispatchQueue(label: "view")
        do {
            let router = EffectRouter<Int, Int>()
                .routeEffects(withParameters: { $0 }).toEvent { $0 > 0 ? $0 - 1 : nil }
            let controller = Mobius.loop(
                update: { (model: TrackedModel, event: Int) -> Next<TrackedModel, Int> in
                    .next(TrackedModel(model.value + event), effects: [event])
                },
                effectHandler: router.asConnectable
            ).makeController(from: TrackedModel(0), loopQueue: loopQueue, viewQueue: viewQueue)
            let seen = Recorder<Int>()
            controller.connectView(
                AnyConnectable<TrackedModel, Int> { _ in
                    Connection(acceptClosure: { seen.record($0.value) }, disposeClosure: {})
                }
            )
            controller.start()
            controller.dispatchEvent(3)
            #expect(eventually { seen.all.last == 6 })
            controller.stop()
            controller.start()
            controller.stop()
        }
        drain(loopQueue)
        drain(viewQueue)
        #expect(TrackedModel.alive.value == 0)
    }
}
