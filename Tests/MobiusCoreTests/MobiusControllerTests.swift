import Dispatch
import Foundation
import KernelTestSupport
import MobiusCore
import Testing

/// A view that records the models it gets (and the queue it gets them on) and can send events.
private final class RecordingView: Connectable, Sendable {
    let models = Recorder<String>()
    let onViewQueue = Recorder<Bool>()
    private let consumer = Protected<Consumer<String>?>(nil)
    private let queueKey: DispatchSpecificKey<String>?

    init(queueKey: DispatchSpecificKey<String>? = nil) {
        self.queueKey = queueKey
    }

    func connect(_ consumer: @escaping Consumer<String>) -> Connection<String> {
        self.consumer.withLock { $0 = consumer }
        return Connection(
            acceptClosure: { [queueKey, models, onViewQueue] model in
                if let queueKey {
                    onViewQueue.record(DispatchQueue.getSpecific(key: queueKey) == "view")
                }
                models.record(model)
            },
            disposeClosure: {}
        )
    }

    func send(_ event: String) {
        consumer.withLock { $0 }?(event)
    }
}

private let appendEvent: @Sendable (String, String) -> Next<String, String> = { model, event in
    .next(model + event)
}

private func makeController(
    update: @escaping @Sendable (String, String) -> Next<String, String> = appendEvent,
    effectHandler: AnyConnectable<String, String> = EffectRouter<String, String>().asConnectable,
    from model: String = "S",
    viewQueue: DispatchQueue = DispatchQueue(label: "view")
) -> (MobiusController<String, String, String>, DispatchQueue) {
    let loopQueue = DispatchQueue(label: "loop")
    let controller = Mobius.loop(update: update, effectHandler: effectHandler)
        .makeController(
            from: model,
            initiate: { model in First(model: model + "-init") },
            loopQueue: loopQueue,
            viewQueue: viewQueue
        )
    return (controller, loopQueue)
}

@Suite("MobiusController")
struct MobiusControllerTests {
    @Test("Initiate runs on every start, resuming from the last model (S-init, then S-init-init)")
    func initiateOnEveryStart() {
        let (controller, _) = makeController()
        controller.start()
        #expect(controller.model == "S-init")
        #expect(controller.running)
        controller.stop()
        #expect(!controller.running)
        #expect(controller.model == "S-init")
        controller.start()
        #expect(controller.model == "S-init-init")
        controller.stop()
    }

    @Test("replaceModel sets where the next start begins")
    func replaceModel() {
        let (controller, _) = makeController()
        controller.replaceModel("R")
        controller.start()
        #expect(controller.model == "R-init")
        controller.stop()
    }

    @Test("views get every model, in order, on the view queue; their events reach the loop")
    func views() {
        let key = DispatchSpecificKey<String>()
        let viewQueue = DispatchQueue(label: "view")
        viewQueue.setSpecific(key: key, value: "view")
        let (controller, loopQueue) = makeController(viewQueue: viewQueue)
        let first = RecordingView(queueKey: key)
        let second = RecordingView(queueKey: key)
        controller.connectView(first)
        let secondID = controller.connectView(second)
        controller.start()
        first.send("a")
        second.send("b")
        #expect(eventually { first.models.count == 3 && second.models.count == 3 })
        drain(loopQueue)
        #expect(first.models.all == ["S-init", "S-init" + "a", "S-init" + "ab"])
        #expect(second.models.all == first.models.all)
        #expect(first.onViewQueue.all.allSatisfy { $0 })
        controller.stop()
        controller.disconnectView(id: secondID)
        controller.disconnectView()
    }

    @Test("events from any thread are processed on the loop queue, all of them")
    func eventsFromAnyThread() {
        let onLoopQueue = Recorder<Bool>()
        let key = DispatchSpecificKey<Bool>()
        let loopQueue = DispatchQueue(label: "loop")
        loopQueue.setSpecific(key: key, value: true)
        let controller = Mobius.loop(
            update: { (model: Int, event: Int) -> Next<Int, Never> in
                if model % 1_000 == 0 { onLoopQueue.record(DispatchQueue.getSpecific(key: key) == true) }
                return .next(model + event)
            },
            effectHandler: EffectRouter<Never, Int>().asConnectable
        ).makeController(from: 0, loopQueue: loopQueue, viewQueue: DispatchQueue(label: "view"))
        controller.start()
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<10_000 { controller.dispatchEvent(1) }
        }
        #expect(eventually { controller.model == 20_000 })
        #expect(!onLoopQueue.all.isEmpty && onLoopQueue.all.allSatisfy { $0 })
        controller.stop()
    }

    @Test("stopping with an event still queued drops it, without error")
    func stopWithQueuedEvent() {
        let holder = ControllerBox()
        let seen = Recorder<String>()
        let router = EffectRouter<String, String>()
            .routeEffects(equalTo: "send b then stop").to { _ in
                holder.controller?.dispatchEvent("b")
                holder.controller?.stop()
            }
        let (controller, loopQueue) = makeController(
            update: { model, event in
                seen.record(event)
                return event == "a" ? .next(model + event, effects: ["send b then stop"]) : .next(model + event)
            },
            effectHandler: router.asConnectable
        )
        holder.controller = controller
        controller.start()
        controller.dispatchEvent("a")
        #expect(eventually { !controller.running })
        drain(loopQueue)
        #expect(seen.all == ["a"])
        #expect(controller.model == "S-inita")
        controller.dispatchEvent("after stop")
        drain(loopQueue)
        #expect(seen.all == ["a"])
    }

    @Test("an effect callback that finishes after stop is ended and its event dropped")
    func callbackAfterStop() {
        let parked = Protected<EffectCallback<String>?>(nil)
        let router = EffectRouter<String, String>()
            .routeEffects(equalTo: "slow").to { _, callback in
                parked.withLock { $0 = callback }
                return EmptyDisposable()
            }
        let seen = Recorder<String>()
        let (controller, loopQueue) = makeController(
            update: { model, event in
                seen.record(event)
                return .next(model + event, effects: event == "go" ? ["slow"] : [])
            },
            effectHandler: router.asConnectable
        )
        controller.start()
        controller.dispatchEvent("go")
        #expect(eventually { parked.withLock { $0 } != nil })
        controller.stop()
        let callback = parked.withLock { $0 }
        #expect(callback?.ended == true)
        callback?.send("late")
        callback?.end()
        drain(loopQueue)
        #expect(seen.all == ["go"])
    }

    @Test("views get the first model before Initiate's effects run")
    func firstModelBeforeInitiateEffects() {
        let viewQueue = DispatchQueue(label: "view")
        let order = Recorder<String>()
        let router = EffectRouter<String, String>()
            .routeEffects(equalTo: "hello").on(queue: viewQueue).to { _ in order.record("effect") }
        let controller = Mobius.loop(update: appendEvent, effectHandler: router.asConnectable)
            .makeController(
                from: "S",
                initiate: { model in First(model: model + "-init", effects: ["hello"]) },
                loopQueue: DispatchQueue(label: "loop"),
                viewQueue: viewQueue
            )
        controller.connectView(
            AnyConnectable<String, String> { _ in
                Connection(acceptClosure: { order.record("model \($0)") }, disposeClosure: {})
            }
        )
        controller.start()
        #expect(eventually { order.count == 2 })
        controller.stop()
        #expect(order.all == ["model S-init", "effect"])
    }

    @Test("a connected view does not keep the controller or its loop alive")
    func viewDoesNotRetain() {
        let view = RecordingView()
        weak var weakController: MobiusController<String, String, String>?
        do {
            let (controller, _) = makeController()
            controller.connectView(view)
            controller.start()
            weakController = controller
        }
        #expect(weakController == nil)
        view.send("ignored")
    }

    @Test("misuse is reported: double start, stop when stopped, view or model changes while running")
    func misuse() {
        #expect(
            misuseMessage {
                let (controller, _) = makeController()
                controller.start()
                controller.start()
            }?.contains("cannot start a controller that is running") == true
        )
        #expect(
            misuseMessage {
                let (controller, _) = makeController()
                controller.stop()
            }?.contains("cannot stop a controller that is not running") == true
        )
        #expect(
            misuseMessage {
                let (controller, _) = makeController()
                controller.start()
                controller.connectView(RecordingView())
            }?.contains("cannot connect a view while running") == true
        )
        #expect(
            misuseMessage {
                let (controller, _) = makeController()
                controller.start()
                controller.replaceModel("X")
            }?.contains("cannot replace the model while running") == true
        )
        #expect(
            misuseMessage {
                let (controller, _) = makeController()
                controller.disconnectView()
            }?.contains("no view is connected") == true
        )
        #expect(misuseMessage { _ = makeController().0.model } == nil)
    }

    @Test("stopping from the queue the loop queue runs on is a precondition failure, not a deadlock")
    func stopFromTargetQueue() async {
        await #expect(processExitsWith: .failure) {
            let loopQueue = DispatchQueue(label: "loop")
            let controller = Mobius.loop(
                update: appendEvent, effectHandler: EffectRouter<String, String>().asConnectable
            )
            .makeController(from: "S", loopQueue: loopQueue, viewQueue: DispatchQueue(label: "view"))
            controller.start()
            loopQueue.sync { controller.stop() }
        }
    }
}

/// Lets an effect handler reach the controller it belongs to.
private final class ControllerBox: Sendable {
    private let storage = Protected<MobiusController<String, String, String>?>(nil)

    var controller: MobiusController<String, String, String>? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
