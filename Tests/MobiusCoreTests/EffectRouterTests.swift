import CasePaths
import Dispatch
import Foundation
import MobiusCasePaths
import MobiusCore
import Testing

@CasePathable
enum RouterEffect: Equatable, Sendable {
    case log(String)
    case load(id: Int)
    case exit
    case slow(Int)
    case never
}

/// Connects `router` to a recorder of events and returns the connection and the recorder.
private func connect(
    _ router: EffectRouter<RouterEffect, String>
) -> (Connection<RouterEffect>, Recorder<String>) {
    let events = Recorder<String>()
    return (router.asConnectable.connect { events.record($0) }, events)
}

@Suite("EffectRouter")
struct EffectRouterTests {
    @Test("each route form takes its own effects: case key path, case path, constant, parameter function")
    func routeForms() {
        let handled = Recorder<String>()
        let router = EffectRouter<RouterEffect, String>()
            .routeCase(\.log).to { line in handled.record("log \(line)") }
            .routeCase(
                AnyCasePath(
                    embed: RouterEffect.load,
                    extract: { effect in
                        if case .load(let id) = effect { return id }
                        return nil
                    })
            ).to { id in handled.record("load \(id)") }
            .routeEffects(equalTo: .exit).to { effect in handled.record("exit \(effect)") }
            .routeEffects(withParameters: { effect -> Int? in
                if case .slow(let value) = effect { return value }
                return nil
            }).to { value in handled.record("slow \(value)") }
        let (connection, _) = connect(router)
        connection.accept(.log("hello"))
        connection.accept(.load(id: 7))
        connection.accept(.exit)
        connection.accept(.slow(3))
        #expect(handled.all == ["log hello", "load 7", "exit exit", "slow 3"])
    }

    @Test("toEvent sends the event it returns, and nothing for nil")
    func toEvent() {
        let router = EffectRouter<RouterEffect, String>()
            .routeCase(\.log).toEvent { line in line.isEmpty ? nil : "logged \(line)" }
        let (connection, events) = connect(router)
        connection.accept(.log(""))
        connection.accept(.log("x"))
        #expect(events.all == ["logged x"])
    }

    @Test("an EffectHandler gets a callback per effect; disposing the router ends it and cancels its work")
    func effectHandler() {
        let parked = Recorder<EffectCallback<String>>()
        let cancelled = AtomicCounter()
        let handler = AnyEffectHandler<Int, String> { value, callback in
            callback.send("started \(value)")
            if value == 0 {
                callback.end(with: "done \(value)")
            } else {
                parked.record(callback)
            }
            return AnonymousDisposable { _ = cancelled.increment() }
        }
        let router = EffectRouter<RouterEffect, String>().routeCase(\.slow).to(handler)
        let (connection, events) = connect(router)
        connection.accept(.slow(0))
        connection.accept(.slow(1))
        #expect(events.all == ["started 0", "done 0", "started 1"])
        connection.dispose()
        #expect(cancelled.value == 1)
        #expect(parked.all.first?.ended == true)
        parked.all.first?.send("late")
        connection.accept(.slow(2))
        #expect(events.all == ["started 0", "done 0", "started 1"])
    }

    @Test("a Connectable target is connected once and receives every matching effect")
    func connectable() {
        let received = Recorder<Int>()
        let connections = AtomicCounter()
        let target = AnyConnectable<Int, String> { consumer in
            _ = connections.increment()
            return Connection(
                acceptClosure: { value in
                    received.record(value)
                    consumer("got \(value)")
                },
                disposeClosure: {}
            )
        }
        let (connection, events) = connect(EffectRouter<RouterEffect, String>().routeCase(\.slow).to(target))
        connection.accept(.slow(1))
        connection.accept(.slow(2))
        #expect(connections.value == 1)
        #expect(received.all == [1, 2])
        #expect(events.all == ["got 1", "got 2"])
    }

    @Test("on(queue:) runs the handler on that queue")
    func onQueue() {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "effects")
        queue.setSpecific(key: key, value: "effects")
        let where_ = Recorder<String?>()
        let router = EffectRouter<RouterEffect, String>()
            .routeCase(\.log).on(queue: queue).to { _ in where_.record(DispatchQueue.getSpecific(key: key)) }
        let (connection, _) = connect(router)
        connection.accept(.log("a"))
        drain(queue)
        #expect(where_.all == ["effects"])
    }

    @Test("work queued by on(queue:) does not run once the router is disconnected")
    func onQueueAfterDispose() {
        let queue = DispatchQueue(label: "effects")
        let ran = Recorder<String>()
        let hold = DispatchSemaphore(value: 0)
        let router = EffectRouter<RouterEffect, String>()
            .routeCase(\.log).on(queue: queue).to { line in ran.record(line) }
        let (connection, _) = connect(router)
        queue.async { hold.wait() }
        connection.accept(.log("late"))
        connection.dispose()
        hold.signal()
        drain(queue)
        #expect(ran.all.isEmpty)
    }

    @Test("an async target's event is sent when it returns; disposing cancels tasks still running")
    func asyncTarget() async {
        let slowTask = Recorder<String>()
        let router = EffectRouter<RouterEffect, String>()
            .routeCase(\.load).to { id async -> String? in "loaded \(id)" }
            .routeCase(\.slow).to { seconds async -> String? in
                slowTask.record("started")
                try? await Task.sleep(for: .seconds(seconds))
                let outcome = Task.isCancelled ? "cancelled" : "finished"
                slowTask.record(outcome)
                return outcome
            }
        let (connection, events) = connect(router)
        connection.accept(.load(id: 1))
        #expect(await eventually { events.all == ["loaded 1"] })
        connection.accept(.slow(60))
        #expect(await eventually { slowTask.all == ["started"] })
        connection.dispose()
        // The task sees the cancellation (it would sleep a minute otherwise) and returns an event after the
        // dispose, which must not reach the consumer.
        #expect(await eventually { slowTask.all == ["started", "cancelled"] }, "disposing did not cancel the task")
        #expect(await !eventually(timeout: 0.2) { events.count > 1 }, "an event arrived after dispose: \(events.all)")
    }

    @Test("an effect no route takes, or that two routes take, is reported as misuse")
    func unroutedAndDoublyRouted() {
        let none = misuseMessage {
            let router = EffectRouter<RouterEffect, String>().routeCase(\.log).to { _ in }
            router.asConnectable.connect { _ in }.accept(.never)
        }
        #expect(none?.contains("0 EffectHandlers could be found for effect: never") == true)
        let two = misuseMessage {
            let router = EffectRouter<RouterEffect, String>()
                .routeCase(\.log).to { _ in }
                .routeEffects(withParameters: { $0 == .log("x") ? () : nil }).to { _ in }
            router.asConnectable.connect { _ in }.accept(.log("x"))
        }
        #expect(two?.contains("2 EffectHandlers could be found for effect: log(\"x\")") == true)
        let fine = misuseMessage {
            let router = EffectRouter<RouterEffect, String>()
                .routeCase(\.log).to { _ in }
                .routeEffects(withParameters: { $0 == .log("x") ? () : nil }).to { _ in }
            router.asConnectable.connect { _ in }.accept(.log("y"))
        }
        #expect(fine == nil)
    }
}

@Suite("EffectCallback")
struct EffectCallbackTests {
    @Test("send after end does nothing; end runs its action once; end(with:) sends, then ends")
    func contract() {
        let sent = Recorder<Int>()
        let ends = AtomicCounter()
        let callback = EffectCallback<Int>(onSend: { sent.record($0) }, onEnd: { _ = ends.increment() })
        callback.send(1)
        callback.end(with: 2, 3)
        callback.send(4)
        callback.end()
        callback.end(with: 5)
        #expect(sent.all == [1, 2, 3])
        #expect(ends.value == 1)
        #expect(callback.ended)
    }

    @Test("concurrent ends run the end action exactly once")
    func concurrentEnd() {
        let ends = AtomicCounter()
        let callback = EffectCallback<Int>(onSend: { _ in }, onEnd: { _ = ends.increment() })
        DispatchQueue.concurrentPerform(iterations: 8) { _ in callback.end() }
        #expect(ends.value == 1)
    }
}
