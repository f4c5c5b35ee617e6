import Dispatch
import Foundation
import KernelTestSupport
import MobiusCore
import Synchronization
import Testing

@Suite("MobiusLoop observers")
struct MobiusLoopObserverTests {
    @Test("an observer added while an event is processed gets the current model after that event, then the rest")
    func observerAddedDuringProcessing() {
        let late = Recorder<Int>()
        let added = AtomicCounter()
        let box = LoopBox<Int, Int, Never>()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model + event) },
            effectHandler: EffectRouter<Never, Int>().asConnectable
        ).start(from: 0)
        box.loop = loop
        loop.addObserver { model in
            if model == 1, added.increment() == 1 {
                box.loop?.addObserver { late.record($0) }
                #expect(late.all.isEmpty)
            }
        }
        loop.dispatchEvent(1)
        loop.dispatchEvent(1)
        #expect(late.all == [1, 2])
    }

    @Test("after dispose no observer is called, even one later in the list than the observer that disposed")
    func noObserverAfterDispose() {
        let second = Recorder<Int>()
        let box = LoopBox<Int, Int, Never>()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model + event) },
            effectHandler: EffectRouter<Never, Int>().asConnectable
        ).start(from: 0)
        box.loop = loop
        loop.addObserver { model in
            if model == 1 { box.loop?.dispose() }
        }
        loop.addObserver { second.record($0) }
        loop.dispatchEvent(1)
        #expect(second.all == [0])
    }

    @Test("a removed observer is not called again")
    func removedObserver() {
        let seen = Recorder<Int>()
        let loop = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in .next(model + event) },
            effectHandler: EffectRouter<Never, Int>().asConnectable
        ).start(from: 0)
        let observation = loop.addObserver { seen.record($0) }
        observation.dispose()
        loop.dispatchEvent(1)
        #expect(seen.all == [0])
    }
}
