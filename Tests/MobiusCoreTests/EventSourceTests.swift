import Dispatch
import MobiusCore
import Testing

@Suite("Event sources and disposables")
struct EventSourceTests {
    @Test("a composite source subscribes to each source and disposes each")
    func composite() {
        let disposed = Recorder<String>()
        func source(_ name: String) -> AnyEventSource<String> {
            AnyEventSource { consumer in
                consumer(name)
                return AnonymousDisposable { disposed.record(name) }
            }
        }
        let composite = CompositeEventSourceBuilder<String>()
            .addEventSource(source("a"))
            .addEventSource(source("b"))
            .build()
        let events = Recorder<String>()
        let subscription = composite.subscribe { events.record($0) }
        #expect(events.all == ["a", "b"])
        subscription.dispose()
        subscription.dispose()
        #expect(disposed.all == ["a", "b"])
    }

    @Test("an AsyncSequence feeds a loop until the subscription is disposed")
    func asyncSequence() async {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let ended = Recorder<String>()
        continuation.onTermination = { ended.record("\($0)") }
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model + event) },
            effectHandler: EffectRouter<Never, Int>().asConnectable
        )
        .withEventSource(AnyEventSource(stream))
        .start(from: 0)
        continuation.yield(1)
        continuation.yield(2)
        #expect(await eventually { loop.latestModel == 3 })
        loop.dispose()
        // Disposing the loop disposes the subscription, which cancels the task iterating the sequence: the stream
        // ends, and what is yielded afterwards goes nowhere.
        #expect(await eventually { ended.all == ["cancelled"] }, "the sequence is still being read: \(ended.all)")
        if case .terminated = continuation.yield(100) {
        } else {
            Issue.record("the stream still takes elements after the loop was disposed")
        }
        #expect(loop.latestModel == 3)
    }

    @Test("an AsyncSequence that throws ends with the event onError makes of the error")
    func asyncSequenceError() async {
        struct Broken: Error {}
        let stream = AsyncThrowingStream<String, any Error> { continuation in
            continuation.yield("one")
            continuation.finish(throwing: Broken())
        }
        let events = Recorder<String>()
        let source = AsyncSequenceEventSource(stream, onError: { error in "failed: \(error)" })
        let subscription = source.subscribe { events.record($0) }
        #expect(await eventually { events.count == 2 })
        #expect(events.all == ["one", "failed: Broken()"])
        subscription.dispose()
    }

    @Test("disposables run once, however many times or threads dispose them")
    func disposables() {
        let runs = AtomicCounter()
        let disposable = AnonymousDisposable { _ = runs.increment() }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in disposable.dispose() }
        #expect(runs.value == 1)
        let inner = AtomicCounter()
        let composite = CompositeDisposable(disposables: [
            AnonymousDisposable { _ = inner.increment() }, EmptyDisposable(), AnonymousDisposable(disposable),
        ])
        composite.dispose()
        composite.dispose()
        #expect(inner.value == 1)
        #expect(runs.value == 1)
    }
}
