import MobiusCore
import MobiusTest
import Synchronization
import Testing

enum CounterEvent: Sendable { case increment, decrement, reset }
enum CounterEffect: Equatable, Sendable { case save(Int), beep, alarm }

struct Counter: Equatable, Sendable {
    var value = 0
    var label = "counter"
}

let counterUpdate = Update<Counter, CounterEvent, CounterEffect> { model, event in
    switch event {
    case .increment:
        return .next(Counter(value: model.value + 1, label: model.label), effects: [.save(model.value + 1)])
    case .decrement where model.value == 0:
        return .dispatchEffects([.beep, .alarm])
    case .decrement:
        return .next(Counter(value: model.value - 1, label: model.label))
    case .reset:
        return .noChange
    }
}

/// Collects the failures an assertion reports instead of failing the test.
final class Failures: Sendable {
    private let messages = Mutex<[String]>([])

    var record: AssertionFailure {
        { message, _, _ in self.messages.withLock { $0.append(message) } }
    }

    var all: [String] { messages.withLock { $0 } }
}

@Suite("UpdateSpec and InitSpec")
struct SpecTests {
    @Test("a passing spec reports nothing")
    func passing() {
        let failures = Failures()
        UpdateSpec(counterUpdate)
            .given(Counter(value: 1))
            .when(.increment, .increment)
            .then(
                assertThatNext(
                    hasModel(Counter(value: 3)),
                    hasExactlyEffects([.save(3)]),
                    failFunction: failures.record
                )
            )
        UpdateSpec(counterUpdate)
            .given(Counter())
            .when(.decrement)
            .then(
                assertThatNext(
                    hasNoModel(),
                    hasEffects([.alarm]),
                    hasOnlyEffects([.alarm, .beep]),
                    failFunction: failures.record
                )
            )
        UpdateSpec(counterUpdate).given(Counter()).when(.reset)
            .then(assertThatNext(hasNothing(), hasNoEffects(), failFunction: failures.record))
        #expect(failures.all.isEmpty)
    }

    @Test("every failing predicate is reported, in the order given, with a line diff of the models")
    func failing() {
        let failures = Failures()
        UpdateSpec(counterUpdate)
            .given(Counter(value: 1))
            .when(.increment)
            .then(
                assertThatNext(
                    hasModel(Counter(value: 5)),
                    hasNoEffects(),
                    hasExactlyEffects([.beep]),
                    hasOnlyEffects([.save(2), .beep]),
                    hasNothing(),
                    failFunction: failures.record
                )
            )
        #expect(
            failures.all == [
                lines(
                    "Different final model than expected (−), got (+): ",
                    "\(shared)   ▿ MobiusTestTests.Counter",
                    "−     - value: 5",
                    "+     - value: 2",
                    "\(shared)     - label: \"counter\""
                ),
                "Expected no effects. Got: <[MobiusTestTests.CounterEffect.save(2)]>",
                lines(
                    "Different effects than expected (−), got (+): ",
                    "\(shared)   ▿ 1 element",
                    "−     - MobiusTestTests.CounterEffect.beep",
                    "+     ▿ MobiusTestTests.CounterEffect.save",
                    "+       - save: 2"
                ),
                "Missing 1 expected effect (−):\n−   - MobiusTestTests.CounterEffect.beep",
                "Expected final Next to have no model. Got: <Counter(value: 2, label: \"counter\")>",
            ])
    }

    @Test("thenEachStep asserts every intermediate step, and the number of steps")
    func eachStep() {
        let failures = Failures()
        let then = UpdateSpec(counterUpdate).given(Counter()).when([.increment, .decrement, .decrement, .reset])
        then.thenEachStep(
            assertThatNext(hasModel(Counter(value: 1)), hasExactlyEffects([.save(1)]), failFunction: failures.record),
            assertThatNext(hasModel(Counter(value: 0)), hasNoEffects(), failFunction: failures.record),
            assertThatNext(hasNoModel(), hasExactlyEffects([.beep, .alarm]), failFunction: failures.record),
            assertThatNext(hasNothing(), failFunction: failures.record),
            failFunction: failures.record
        )
        #expect(failures.all.isEmpty)
        #expect(then.steps.map(\.model.value) == [1, 0, 0, 0])
        then.thenEachStep(assertThatNext(hasNothing(), failFunction: failures.record), failFunction: failures.record)
        #expect(failures.all == ["4 events were applied but 1 steps asserted"])
    }

    @Test("a spec with no events fails instead of passing without checking anything")
    func noEvents() {
        let failures = Failures()
        UpdateSpec(counterUpdate).given(Counter()).when([])
            .then(assertThatNext(hasNothing(), failFunction: failures.record), failFunction: failures.record)
        #expect(failures.all == ["UpdateSpec: no events were given to `when`, so there is nothing to assert"])
    }

    @Test("InitSpec checks the first model and effects")
    func initSpec() {
        let failures = Failures()
        let spec = InitSpec<Counter, CounterEffect> { model in First(model: model, effects: [.save(model.value)]) }
        spec.when(Counter(value: 4)).then(
            assertThatFirst(
                hasModel(Counter(value: 4)),
                hasEffects([.save(4)]),
                hasOnlyEffects([.save(4)]),
                hasExactlyEffects([.save(4)]),
                failFunction: failures.record
            )
        )
        #expect(failures.all.isEmpty)
        spec.when(Counter(value: 4)).then(assertThatFirst(hasNoEffects(), failFunction: failures.record))
        #expect(failures.all.count == 1)
    }

    @Test("by default a failure is reported to the running framework (here Swift Testing)")
    func defaultReporting() {
        withKnownIssue {
            UpdateSpec(counterUpdate).given(Counter()).when(.increment).then(assertThatNext(hasNoEffects()))
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("Expected no effects. Got: <") }
        }
    }
}
