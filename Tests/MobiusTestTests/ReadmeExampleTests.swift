// The example in docs/MOBIUS.md, compiled and run, so that what a reader copies works.

import MobiusCasePaths
import MobiusCore
import MobiusTest
import Synchronization
import Testing

private struct Model: Equatable, Sendable { var count = 0 }
private enum Event: Sendable { case increment, reset }
@CasePathable private enum Effect: Equatable, Sendable { case save(Int) }

private let update = Update<Model, Event, Effect> { model, event in
    switch event {
    case .increment: return .next(Model(count: model.count + 1), effects: [.save(model.count + 1)])
    case .reset: return model.count == 0 ? .noChange : .next(Model())
    }
}

@Suite("README example")
struct ReadmeExampleTests {
    @Test func loopRuns() {
        let saved = Saved()
        let effects = EffectRouter<Effect, Event>()
            .routeCase(\.save).to { count in saved.record(count) }
        let loop = Mobius.loop(update: update, effectHandler: effects.asConnectable).start(from: Model())
        loop.dispatchEvent(.increment)
        #expect(loop.latestModel == Model(count: 1))
        #expect(saved.all == [1])
    }

    @Test func incrementSaves() {
        UpdateSpec(update)
            .given(Model(count: 1))
            .when(.increment, .increment)
            .then(assertThatNext(hasModel(Model(count: 3)), hasExactlyEffects([.save(3)])))
    }

    @Test func everyStep() {
        UpdateSpec(update)
            .given(Model())
            .when(.increment, .reset)
            .thenEachStep(
                assertThatNext(hasModel(Model(count: 1)), hasEffects([.save(1)])),
                assertThatNext(hasModel(Model()), hasNoEffects())
            )
    }
}

private final class Saved: Sendable {
    private let values = Mutex<[Int]>([])
    func record(_ value: Int) { values.withLock { $0.append(value) } }
    var all: [Int] { values.withLock { $0 } }
}
