// MobiusCore throughput, allocations and memory, 1,000,000 events per measured iteration.
//
//   make benchmark
//
// (a) a raw loop with an Int model and no effects; (b) one effect per event, routed by EffectRouter to a
// fire-and-forget closure; (c) a MobiusController fed from two threads, until its view has seen the last model
// (the view receives every model, 1,000,001 per iteration, on a queue of its own: checked by counting them).
// Each measured iteration is 1,000,000 events: wall clock in ms per million events (1000 / ms = M events/s),
// mallocs per million events, peak resident memory of the process.

import Benchmark
import Dispatch
import MobiusCore
import Synchronization

enum Tick: Equatable, Sendable {
    case tick
}

/// Events per measured iteration.
let events = 1_000_000

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        scalingFactor: .one,
        maxDuration: .seconds(20),
        maxIterations: 10
    )

    Benchmark("(a) loop, Int model, no effects") { benchmark in
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model &+ event) },
            effectHandler: EffectRouter<Never, Int>().asConnectable
        ).start(from: 0)
        benchmark.startMeasurement()
        for _ in 0..<events {
            loop.dispatchEvent(1)
        }
        benchmark.stopMeasurement()
        precondition(loop.latestModel == events)
        loop.dispose()
    }

    Benchmark("(b) one effect per event, routed to a fire-and-forget closure") { benchmark in
        let handled = Counter()
        let router = EffectRouter<Tick, Int>()
            .routeEffects(equalTo: .tick).to { _ in handled.bump() }
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Tick> in .next(model &+ event, effects: [.tick]) },
            effectHandler: router.asConnectable
        ).start(from: 0)
        benchmark.startMeasurement()
        for _ in 0..<events {
            loop.dispatchEvent(1)
        }
        benchmark.stopMeasurement()
        precondition(handled.value == events)
        loop.dispose()
    }

    Benchmark("(c) controller fed from 2 threads, until the view sees the last model") { benchmark in
        let total = events
        let done = DispatchSemaphore(value: 0)
        let controller = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model &+ event) },
            effectHandler: EffectRouter<Never, Int>().asConnectable
        ).makeController(
            from: 0,
            loopQueue: DispatchQueue(label: "bench.loop"),
            viewQueue: DispatchQueue(label: "bench.view")
        )
        // The view counts every model it receives: the first one and one per event, none skipped or merged.
        let seen = Counter()
        controller.connectView(
            AnyConnectable<Int, Int> { _ in
                Connection(
                    acceptClosure: { model in
                        seen.bump()
                        if model == total { done.signal() }
                    }, disposeClosure: {})
            }
        )
        controller.start()
        benchmark.startMeasurement()
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            let count = half == 0 ? total / 2 : total - total / 2
            for _ in 0..<count {
                controller.dispatchEvent(1)
            }
        }
        done.wait()
        benchmark.stopMeasurement()
        precondition(seen.value == total + 1, "the view saw \(seen.value) models of \(total + 1)")
        controller.stop()
    }
}

/// A counter bumped by the fire-and-forget handler, so the work is not optimised away.
final class Counter: Sendable {
    private let storage = Atomic<Int>(0)

    func bump() {
        storage.add(1, ordering: .relaxed)
    }

    var value: Int {
        storage.load(ordering: .relaxed)
    }
}
