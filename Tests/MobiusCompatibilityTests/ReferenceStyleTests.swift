// Code written the way users of Spotify's Mobius.swift write it, compiled in the Swift 5 language mode: public
// models that do not declare Sendable, closures that capture mutable local state, XCTest, `MobiusHooks` used
// as in the reference. It proves that such code compiles against MobiusCore and behaves the same.

import MobiusCore
import MobiusTest
import XCTest

/// A counter, public and not declared Sendable, as many reference users' models are.
public struct CounterModel: Equatable {
    /// The current count.
    public var count: Int
    /// The counts saved so far.
    public var saved: [Int]
}

/// What happens to the counter.
public enum CounterEvent {
    case increment
    case saved(Int)
}

/// What the counter asks for.
public enum CounterEffect: Equatable {
    case save(Int)
    case log(String)
}

func counterUpdate(model: CounterModel, event: CounterEvent) -> Next<CounterModel, CounterEffect> {
    switch event {
    case .increment:
        let count = model.count + 1
        return .next(CounterModel(count: count, saved: model.saved), effects: [.save(count), .log("count \(count)")])
    case .saved(let count):
        return .next(CounterModel(count: model.count, saved: model.saved + [count]))
    }
}

final class ReferenceStyleTests: XCTestCase {
    func testLoopWithRouterAndObserver() {
        var logged: [String] = []
        var observed: [Int] = []
        let router = EffectRouter<CounterEffect, CounterEvent>()
            .routeEffects(withParameters: { effect -> Int? in
                if case .save(let count) = effect { return count }
                return nil
            })
            .toEvent { count in .saved(count) }
            .routeEffects(withParameters: { effect -> String? in
                if case .log(let line) = effect { return line }
                return nil
            })
            .to { line in logged.append(line) }
        let loop = Mobius.loop(update: counterUpdate, effectHandler: router.asConnectable)
            .start(from: CounterModel(count: 0, saved: []))
        let observation = loop.addObserver { model in observed.append(model.count) }
        loop.dispatchEvent(.increment)
        loop.dispatchEvent(.increment)
        XCTAssertEqual(loop.latestModel, CounterModel(count: 2, saved: [1, 2]))
        XCTAssertEqual(logged, ["count 1", "count 2"])
        XCTAssertEqual(observed, [0, 1, 1, 2, 2])
        observation.dispose()
        loop.dispose()
    }

    func testEffectHandlerClassAndEventSource() {
        final class Saver: EffectHandler {
            var saves = 0
            func handle(_ count: Int, _ callback: EffectCallback<CounterEvent>) -> Disposable {
                saves += 1
                callback.end(with: .saved(count))
                return AnonymousDisposable {}
            }
        }
        final class Clicks: EventSource {
            func subscribe(consumer: @escaping Consumer<CounterEvent>) -> Disposable {
                consumer(.increment)
                return AnonymousDisposable {}
            }
        }
        let saver = Saver()
        let router = EffectRouter<CounterEffect, CounterEvent>()
            .routeEffects(withParameters: { effect -> Int? in
                if case .save(let count) = effect { return count }
                return nil
            })
            .to(saver)
            .routeEffects(withParameters: { effect -> String? in
                if case .log(let line) = effect { return line }
                return nil
            })
            .to { _ in }
        let loop = Mobius.loop(update: Update(counterUpdate), effectHandler: router.asConnectable)
            .withEventSource(Clicks())
            .start(from: CounterModel(count: 0, saved: []))
        XCTAssertEqual(loop.latestModel, CounterModel(count: 1, saved: [1]))
        XCTAssertEqual(saver.saves, 1)
        loop.dispose()
    }

    func testControllerWithInitiate() {
        let loopQueue = DispatchQueue(label: "loop")
        let router = EffectRouter<CounterEffect, CounterEvent>()
            .routeEffects(withParameters: { _ in () }).to { _ in }
        let controller = Mobius.loop(update: counterUpdate, effectHandler: router.asConnectable)
            .makeController(
                from: CounterModel(count: 5, saved: []),
                initiate: { model in First(model: CounterModel(count: model.count * 2, saved: [])) },
                loopQueue: loopQueue,
                viewQueue: loopQueue
            )
        controller.start()
        XCTAssertEqual(controller.model.count, 10)
        controller.stop()
        controller.start()
        XCTAssertEqual(controller.model.count, 20)
        controller.stop()
    }

    func testUpdateSpecThroughXCTest() {
        UpdateSpec(counterUpdate)
            .given(CounterModel(count: 0, saved: []))
            .when(.increment)
            .then(
                assertThatNext(
                    hasModel(CounterModel(count: 1, saved: [])),
                    hasExactlyEffects([.save(1), .log("count 1")]),
                    failFunction: XCTFail
                )
            )
        var failures: [String] = []
        UpdateSpec(counterUpdate)
            .given(CounterModel(count: 0, saved: []))
            .when(.increment)
            .then(assertThatNext(hasNoEffects(), failFunction: { message, _, _ in failures.append(message) }))
        XCTAssertEqual(failures.count, 1)
    }
}
