// Every predicate's failure message, word for word and line for line as Mobius.swift's MobiusTest prints it for
// the same values: a suite brought over that checks messages passes here.

import MobiusCore
import MobiusTest
import Testing

/// The marker of a diff line both values share (U+2007 FIGURE SPACE); `−` (U+2212) and `+` mark the others.
let shared = "\u{2007}"

/// A message of several lines, one argument each (so that a line's trailing space stays visible).
func lines(_ lines: String...) -> String {
    lines.joined(separator: "\n")
}

/// What `predicate` reports, through `UpdateSpec` and `assertThatNext`, for an update that answers `next`.
private func nextFailures<Model: Sendable, Effect: Sendable>(
    _ predicate: @escaping NextPredicate<Model, Effect>,
    for next: Next<Model, Effect>,
    from model: Model
) -> [String] {
    let failures = Failures()
    UpdateSpec<Model, Int, Effect> { _, _ in next }
        .given(model)
        .when(0)
        .then(assertThatNext(predicate, failFunction: failures.record))
    return failures.all
}

/// What `predicate` reports, through `InitSpec` and `assertThatFirst`, for an initiate function that answers `first`.
private func firstFailures<Model: Sendable, Effect: Sendable>(
    _ predicate: @escaping FirstPredicate<Model, Effect>,
    for first: First<Model, Effect>
) -> [String] {
    let failures = Failures()
    InitSpec<Model, Effect> { _ in first }
        .when(first.model)
        .then(assertThatFirst(predicate, failFunction: failures.record))
    return failures.all
}

@Suite("Failure messages, as Mobius.swift's MobiusTest prints them")
struct MessageTests {
    typealias Fruit = Next<String, String>
    typealias Numbers = Next<String, Int>

    @Test("Next hasNothing: the model is reported first, then the effects")
    func nextHasNothing() {
        let noModel = "Expected final Next to have no model. Got: <dragonfruit>"
        #expect(nextFailures(hasNothing(), for: Fruit.next("dragonfruit"), from: "") == [noModel])
        #expect(
            nextFailures(hasNothing(), for: Fruit.dispatchEffects(["tomato"]), from: "")
                == ["Expected no effects. Got: <[\"tomato\"]>"]
        )
        #expect(nextFailures(hasNothing(), for: Fruit.next("dragonfruit", effects: ["tomato"]), from: "") == [noModel])
        #expect(nextFailures(hasNothing(), for: Fruit.noChange, from: "").isEmpty)
    }

    @Test("Next hasNoModel and hasModel()")
    func nextModelPresence() {
        #expect(
            nextFailures(hasNoModel(), for: Fruit.next("pomegranate"), from: "")
                == ["Expected final Next to have no model. Got: <pomegranate>"]
        )
        #expect(
            nextFailures(hasNoModel(), for: Next<Counter, CounterEffect>.next(Counter(value: 2)), from: Counter())
                == ["Expected final Next to have no model. Got: <Counter(value: 2, label: \"counter\")>"]
        )
        #expect(
            nextFailures(hasModel(), for: Fruit.dispatchEffects(["1", "3"]), from: "")
                == ["Expected final Next to have a model. Got: <nil>"]
        )
    }

    @Test("Next hasModel(_:): the diff of the two models' dumps, a missing model as nil")
    func nextHasModel() {
        #expect(
            nextFailures(hasModel("banana"), for: Fruit.next("apple"), from: "")
                == ["Different final model than expected (−), got (+): \n−   - \"banana\"\n+   - \"apple\""]
        )
        #expect(
            nextFailures(hasModel("banana"), for: Fruit.dispatchEffects(["cherry"]), from: "")
                == ["Different final model than expected (−), got (+): \n−   - \"banana\"\n+   - nil"]
        )
        let counter = Next<Counter, CounterEffect>.next(Counter(value: 2))
        let diff = lines(
            "Different final model than expected (−), got (+): ",
            "\(shared)   ▿ MobiusTestTests.Counter",
            "−     - value: 5",
            "+     - value: 2",
            "\(shared)     - label: \"counter\""
        )
        #expect(nextFailures(hasModel(Counter(value: 5)), for: counter, from: Counter()) == [diff])
    }

    @Test("Next hasNoEffects")
    func nextHasNoEffects() {
        #expect(
            nextFailures(hasNoEffects(), for: Fruit.dispatchEffects(["grapefruit"]), from: "")
                == ["Expected no effects. Got: <[\"grapefruit\"]>"]
        )
    }

    @Test("Next hasEffects: the missing effects, each diffed against the closest unexpected one")
    func nextHasEffects() {
        #expect(
            nextFailures(hasEffects([3]), for: Numbers.dispatchEffects([1]), from: "")
                == ["Missing 1 expected effect (−), got (+) (with 1 actual effect unmatched):\n−   - 3"]
        )
        #expect(
            nextFailures(hasEffects([88]), for: Numbers.noChange, from: "")
                == ["Missing 1 expected effect (−), got (+) (with 0 actual effects unmatched):\n−   - 88"]
        )
        let lists = Next<String, [Int]>.dispatchEffects([[1, 2, 3], [1, 2, 4]])
        let closest = lines(
            "Missing 2 expected effects (−), got (+) (with 1 actual effect unmatched):",
            "\(shared)   ▿ 3 elements",
            "\(shared)     - 1",
            "\(shared)     - 2",
            "−     - 5",
            "+     - 4",
            "−   ▿ 3 elements",
            "−     - 1",
            "−     - 2",
            "−     - 6"
        )
        #expect(nextFailures(hasEffects([[1, 2, 3], [1, 2, 5], [1, 2, 6]]), for: lists, from: "") == [closest])
        let counter = Next<Counter, CounterEffect>.dispatchEffects([.beep, .save(2)])
        let sameCase = lines(
            "Missing 1 expected effect (−), got (+) (with 2 actual effects unmatched):",
            "\(shared)   ▿ MobiusTestTests.CounterEffect.save",
            "−     - save: 3",
            "+     - save: 2"
        )
        #expect(nextFailures(hasEffects([.save(3)]), for: counter, from: Counter()) == [sameCase])
    }

    @Test("Next hasOnlyEffects: the missing and the unexpected effects, diffed against each other")
    func nextHasOnlyEffects() {
        #expect(
            nextFailures(hasOnlyEffects([1, 2, 3, 4]), for: Numbers.dispatchEffects([1, 2, 3, 4, 5, 0]), from: "")
                == ["Got 2 actual unmatched effects (+):\n+   - 5\n+   - 0"]
        )
        #expect(
            nextFailures(hasOnlyEffects([3]), for: Numbers.dispatchEffects([1]), from: "")
                == ["Missing 1 expected effect (−), got 1 actual unmatched effect (+):\n−   - 3\n+   - 1"]
        )
        #expect(
            nextFailures(hasOnlyEffects([88]), for: Numbers.noChange, from: "")
                == ["Missing 1 expected effect (−):\n−   - 88"]
        )
        let counter = Next<Counter, CounterEffect>.dispatchEffects([.save(2), .beep])
        let both = lines(
            "Missing 2 expected effects (−), got 2 actual unmatched effects (+):",
            "−   - MobiusTestTests.CounterEffect.alarm",
            "\(shared)   ▿ MobiusTestTests.CounterEffect.save",
            "−     - save: 3",
            "+     - save: 2",
            "+   - MobiusTestTests.CounterEffect.beep"
        )
        #expect(nextFailures(hasOnlyEffects([.alarm, .save(3)]), for: counter, from: Counter()) == [both])
        #expect(
            nextFailures(hasOnlyEffects([1, 2, 3, 4]), for: Numbers.dispatchEffects([4, 1, 3, 2]), from: "").isEmpty)
    }

    @Test("Next hasOnlyEffects counts repeats: an effect there more often on one side is unmatched")
    func nextHasOnlyEffectsRepeats() {
        #expect(
            nextFailures(hasOnlyEffects([1]), for: Numbers.dispatchEffects([1, 1]), from: "")
                == ["Got 1 actual unmatched effect (+):\n+   - 1"]
        )
        #expect(
            nextFailures(hasOnlyEffects([1, 2, 2]), for: Numbers.dispatchEffects([2, 1]), from: "")
                == ["Missing 1 expected effect (−):\n−   - 2"]
        )
    }

    @Test("Next hasExactlyEffects: the diff of the two lists' dumps")
    func nextHasExactlyEffects() {
        let reversed = lines(
            "Different effects than expected (−), got (+): ",
            "\(shared)   ▿ 4 elements",
            "−     - 1",
            "−     - 2",
            "−     - 3",
            "\(shared)     - 4",
            "+     - 3",
            "+     - 2",
            "+     - 1"
        )
        #expect(
            nextFailures(hasExactlyEffects([1, 2, 3, 4]), for: Numbers.dispatchEffects([4, 3, 2, 1]), from: "")
                == [reversed]
        )
        let more = lines(
            "Different effects than expected (−), got (+): ",
            "−   ▿ 4 elements",
            "+   ▿ 6 elements",
            "\(shared)     - 1",
            "\(shared)     - 2",
            "\(shared)     - 3",
            "\(shared)     - 4",
            "+     - 5",
            "+     - 0"
        )
        #expect(
            nextFailures(hasExactlyEffects([1, 2, 3, 4]), for: Numbers.dispatchEffects([1, 2, 3, 4, 5, 0]), from: "")
                == [more]
        )
        #expect(
            nextFailures(hasExactlyEffects([88]), for: Numbers.noChange, from: "")
                == ["Different effects than expected (−), got (+): \n−   ▿ 1 element\n−     - 88\n+   - 0 elements"]
        )
    }

    @Test("First hasModel and hasNoEffects")
    func firstModelAndNoEffects() {
        #expect(
            firstFailures(hasModel(1), for: First<Int, Int>(model: 2))
                == ["Different model than expected (−), got (+): \n−   - 1\n+   - 2"]
        )
        #expect(
            firstFailures(hasNoEffects(), for: First<Int, Int>(model: 3, effects: [4]))
                == ["Expected no effects, got <[4]>"]
        )
    }

    @Test("First hasEffects, hasOnlyEffects and hasExactlyEffects read as the Next ones")
    func firstEffects() {
        #expect(
            firstFailures(hasEffects([10]), for: First<Int, Int>(model: 3, effects: [4]))
                == ["Missing 1 expected effect (−), got (+) (with 1 actual effect unmatched):\n−   - 10"]
        )
        #expect(
            firstFailures(hasOnlyEffects([4, 7, 0]), for: First<Int, Int>(model: 3, effects: [1, 4, 7, 0]))
                == ["Got 1 actual unmatched effect (+):\n+   - 1"]
        )
        #expect(
            firstFailures(hasOnlyEffects([10]), for: First<Int, Int>(model: 3, effects: [4]))
                == ["Missing 1 expected effect (−), got 1 actual unmatched effect (+):\n−   - 10\n+   - 4"]
        )
        let reordered = lines(
            "Different effects than expected (−), got (+): ",
            "\(shared)   ▿ 3 elements",
            "−     - 4",
            "−     - 7",
            "\(shared)     - 0",
            "+     - 7",
            "+     - 4"
        )
        #expect(
            firstFailures(hasExactlyEffects([4, 7, 0]), for: First<Int, Int>(model: 3, effects: [0, 7, 4]))
                == [reordered]
        )
    }

    @Test("EffectRouterSpec: expectEvents names the events sent back and those expected")
    func effectRouterSpec() {
        let router = EffectRouter<String, String>()
            .routeEffects(withParameters: { $0 }).toEvent { effect in "\(effect) done" }
        let failures = Failures()
        EffectRouterSpec.given(router)
            .when("load", "save")
            .then(expectEvents("save done", "load done"), failFunction: failures.record)
        #expect(failures.all.isEmpty)
        let sideEffects = Failures()
        EffectRouterSpec.given(router)
            .when(["load"])
            .then(
                expectEvents("save done"),
                expectSideEffects { sideEffects.record("checked", #file, #line) },
                failFunction: failures.record
            )
        #expect(failures.all == ["Expected [\"load done\"] to contain: [\"save done\"]"])
        #expect(sideEffects.all == ["checked"])
    }
}
