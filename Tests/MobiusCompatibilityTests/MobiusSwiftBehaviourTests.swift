// Behaviours of Spotify's Mobius.swift that its users' code relies on, written as those users write it (Swift 5
// language mode, XCTest, effects that are not Equatable, closures capturing local state): routing by naming an
// enum case, callbacks ended on release, one connection per router, a router connection's release cancelling its
// effect handlers, the controller's view connected only while the loop runs, and the descriptions logs show.

import Dispatch
import MobiusCore
import XCTest

/// A document, a class that is not Equatable, as effect payloads often are.
public final class Document {
    /// What the document says.
    public let text: String

    /// A document saying `text`.
    public init(text: String) {
        self.text = text
    }
}

/// Effects that are not Equatable (one carries a class), routed by naming their cases.
public enum DocumentEffect {
    case save(Document)
    case rename(from: String, to: String)
    case tag(label: String)
    case load(Int)
    case unload(Int)
    case reset
    case close
}

/// The events the document's effects send back.
public enum DocumentEvent: Equatable {
    case closed
    case loaded(Int)
}

/// A generic effect, built by generic code the compiler does not specialise.
public enum Wrapped<Value> {
    case value(Value)
    case empty
    case done
}

@inline(never)
func makeEmpty<Value>(_ type: Value.Type) -> Wrapped<Value> {
    .empty
}

@inline(never)
func makeDone<Value>(_ type: Value.Type) -> Wrapped<Value> {
    .done
}

/// Runs `body` on a thread of its own, with a MobiusHooks error handler that records the message it is given;
/// returns the message, or nil when `body` returns without one. The handler must not return, so it parks the
/// reporting thread for good (each check uses objects of its own, which nothing else waits for).
private func reportedMisuse(of body: @escaping () -> Void) -> String? {
    let finished = DispatchSemaphore(value: 0)
    var message: String?
    MobiusHooks.setErrorHandler { text, _, _ in
        message = text
        finished.signal()
        while true {
            sleep(3600)
        }
    }
    defer { MobiusHooks.setDefaultErrorHandler() }
    DispatchQueue(label: "misuse check").async {
        body()
        finished.signal()
    }
    finished.wait()
    return message
}

final class MobiusSwiftBehaviourTests: XCTestCase {
    // 1. routeCase with the case itself: the embed function of a case with associated values, and a case without.
    func testRouteCaseTakesTheEnumCaseItself() {
        var saved: [String] = []
        var renamed: [String] = []
        var tags: [String] = []
        var resets = 0
        let router = EffectRouter<DocumentEffect, DocumentEvent>()
            .routeCase(DocumentEffect.save).to { document in saved.append(document.text) }
            .routeCase(DocumentEffect.rename).to { from, to in renamed.append("\(from)->\(to)") }
            .routeCase(DocumentEffect.tag).to { label in tags.append(label) }
            .routeCase(DocumentEffect.load).toEvent { number in .loaded(number) }
            .routeCase(DocumentEffect.unload).to { _ in }
            .routeCase(DocumentEffect.reset).to { resets += 1 }
            .routeCase(DocumentEffect.close).toEvent { .closed }
        var events: [DocumentEvent] = []
        let connection = router.asConnectable.connect { event in events.append(event) }
        connection.accept(.save(Document(text: "draft")))
        connection.accept(.rename(from: "a", to: "b"))
        connection.accept(.tag(label: "urgent"))
        connection.accept(.load(7))
        connection.accept(.unload(8))
        connection.accept(.reset)
        connection.accept(.close)
        connection.dispose()
        XCTAssertEqual(saved, ["draft"])
        XCTAssertEqual(renamed, ["a->b"])
        XCTAssertEqual(tags, ["urgent"])
        XCTAssertEqual(resets, 1)
        // load(7) went to load's route only (unload's payload has the same type), close to close's only.
        XCTAssertEqual(events, [.loaded(7), .closed])
    }

    func testRouteCaseOnAGenericEffectBuiltInGenericCode() {
        var empties = 0
        var dones = 0
        var values: [String] = []
        let router = EffectRouter<Wrapped<String>, DocumentEvent>()
            .routeCase(Wrapped<String>.empty).to { empties += 1 }
            .routeCase(Wrapped<String>.done).to { dones += 1 }
            .routeCase(Wrapped<String>.value).to { value in values.append(value) }
        let connection = router.asConnectable.connect { _ in }
        // Built in unspecialised generic code, a case without associated values may leave the payload's bytes
        // undefined: the case is told by its name, not its bytes.
        connection.accept(makeEmpty(String.self))
        connection.accept(makeDone(String.self))
        connection.accept(.value("x"))
        connection.dispose()
        XCTAssertEqual(empties, 1)
        XCTAssertEqual(dones, 1)
        XCTAssertEqual(values, ["x"])
    }

    func testRouteCaseWithAValueThatHasAssociatedValuesIsMisuse() {
        let message = reportedMisuse {
            _ = EffectRouter<DocumentEffect, DocumentEvent>().routeCase(DocumentEffect.load(1))
        }
        XCTAssertTrue(message?.contains("not a case without associated values") == true, message ?? "no misuse")
    }

    // 2. A callback released without end() runs its end action.
    func testEffectCallbackEndsWhenReleased() {
        var ended = 0
        var sent: [Int] = []
        do {
            let callback = EffectCallback<Int>(onSend: { sent.append($0) }, onEnd: { ended += 1 })
            callback.send(1)
        }
        XCTAssertEqual(sent, [1])
        XCTAssertEqual(ended, 1)
        do {
            let callback = EffectCallback<Int>(onSend: { sent.append($0) }, onEnd: { ended += 1 })
            callback.end(with: 2)
        }
        XCTAssertEqual(sent, [1, 2])
        XCTAssertEqual(ended, 2, "ended once, not again on release")
    }

    // 3. A router (and each of its routes) is connected once at a time.
    func testConnectingARouterTwiceAtOnceIsMisuse() {
        final class Handler: EffectHandler {
            func handle(_ document: Document, _ callback: EffectCallback<DocumentEvent>) -> Disposable {
                callback.end()
                return AnonymousDisposable {}
            }
        }
        let routers: [(String, EffectRouter<DocumentEffect, DocumentEvent>)] = [
            ("closure", EffectRouter().routeCase(DocumentEffect.save).to { _ in }),
            ("effect handler", EffectRouter().routeCase(DocumentEffect.save).to(Handler())),
            (
                "connectable",
                EffectRouter().routeCase(DocumentEffect.save).to(
                    AnyConnectable<Document, DocumentEvent> { _ in
                        Connection(acceptClosure: { _ in }, disposeClosure: {})
                    })
            ),
        ]
        for (name, router) in routers {
            let connectable = router.asConnectable
            let first = connectable.connect { _ in }
            let message = reportedMisuse { _ = connectable.connect { _ in } }
            XCTAssertTrue(message?.hasPrefix("Connection limit exceeded") == true, "\(name): \(message ?? "no misuse")")
            first.dispose()
            XCTAssertNil(reportedMisuse { connectable.connect { _ in }.dispose() }, "\(name): after dispose")
        }
    }

    // 4. Releasing a router's connection without dispose() disposes the effect handlers still running.
    func testReleasingTheRouterConnectionDisposesRunningEffectHandlers() {
        final class Slow: EffectHandler {
            var cancelled = 0
            var callbacks: [EffectCallback<DocumentEvent>] = []
            func handle(_ number: Int, _ callback: EffectCallback<DocumentEvent>) -> Disposable {
                callbacks.append(callback)
                return AnonymousDisposable { self.cancelled += 1 }
            }
        }
        let slow = Slow()
        let router = EffectRouter<DocumentEffect, DocumentEvent>()
            .routeCase(DocumentEffect.load).to(slow)
            .routeCase(DocumentEffect.close).to { _ in }
        var connection: Connection<DocumentEffect>? = router.asConnectable.connect { _ in }
        connection?.accept(.load(1))
        connection?.accept(.load(2))
        XCTAssertEqual(slow.cancelled, 0)
        connection = nil
        XCTAssertEqual(slow.cancelled, 2)
        XCTAssertTrue(slow.callbacks.allSatisfy { $0.ended })
        // The routes are free again.
        XCTAssertNil(reportedMisuse { router.asConnectable.connect { _ in }.dispose() })
    }

    // 5. The controller connects its view at start and disposes that connection at stop.
    func testControllerViewConnectionFollowsTheLoop() {
        final class View: Connectable {
            var connections = 0
            var disposals = 0
            var models: [Int] = []
            var send: ((DocumentEvent) -> Void)?
            func connect(_ consumer: @escaping Consumer<DocumentEvent>) -> Connection<Int> {
                connections += 1
                send = consumer
                return Connection(
                    acceptClosure: { self.models.append($0) },
                    disposeClosure: { self.disposals += 1 })
            }
        }
        let queue = DispatchQueue(label: "controller")
        let controller = Mobius.loop(
            update: { (model: Int, event: DocumentEvent) -> Next<Int, DocumentEffect> in .next(model + 1) },
            effectHandler: EffectRouter<DocumentEffect, DocumentEvent>().asConnectable
        )
        .makeController(from: 0, loopQueue: queue, viewQueue: queue)
        let view = View()
        controller.connectView(view)
        XCTAssertEqual(view.connections, 0, "not connected before start")
        controller.start()
        XCTAssertEqual(view.connections, 1)
        view.send?(.closed)
        queue.sync {}
        queue.sync {}
        XCTAssertEqual(view.models, [0, 1])
        controller.stop()
        queue.sync {}
        XCTAssertEqual(view.disposals, 1, "disposed at stop, on the view queue")
        controller.start()
        XCTAssertEqual(view.connections, 2, "connected again at start")
        queue.sync {}
        XCTAssertEqual(view.models, [0, 1, 1], "the new connection starts from the remembered model")
        controller.stop()
        queue.sync {}
        XCTAssertEqual(view.disposals, 2)
        controller.disconnectView()
        controller.start()
        XCTAssertEqual(view.connections, 2, "a disconnected view is not connected again")
        controller.stop()
    }

    func testEventsAViewSendsAsItConnectsReachTheLoop() {
        final class EagerView: Connectable {
            func connect(_ consumer: @escaping Consumer<DocumentEvent>) -> Connection<Int> {
                consumer(.closed)
                return Connection(acceptClosure: { _ in }, disposeClosure: {})
            }
        }
        let queue = DispatchQueue(label: "controller")
        let controller = Mobius.loop(
            update: { (model: Int, event: DocumentEvent) -> Next<Int, DocumentEffect> in .next(model + 1) },
            effectHandler: EffectRouter<DocumentEffect, DocumentEvent>().asConnectable
        )
        .makeController(from: 0, loopQueue: queue, viewQueue: queue)
        controller.connectView(EagerView())
        controller.start()
        queue.sync {}
        XCTAssertEqual(controller.model, 1, "the event sent while connecting, before the loop existed")
        controller.stop()
    }

    func testAReleasedControllerFreesItsEffectHandlerAtOnce() {
        let router = EffectRouter<DocumentEffect, DocumentEvent>().routeCase(DocumentEffect.close).to { _ in }
        let builder = Mobius.loop(
            update: { (model: Int, event: DocumentEvent) -> Next<Int, DocumentEffect> in .noChange },
            effectHandler: router.asConnectable
        )
        var controller: MobiusController<Int, DocumentEvent, DocumentEffect>? = builder.makeController(
            from: 0, loopQueue: DispatchQueue(label: "first"), viewQueue: DispatchQueue(label: "first views"))
        controller?.start()
        controller = nil
        XCTAssertNil(reportedMisuse { builder.start(from: 0).dispose() }, "the router is free once released")
    }

    // 6. First and Next read in logs as they do with Mobius.swift.
    func testFirstAndNextDescriptions() {
        var lines: [String] = []
        let first = First<Int, String>(model: 1, effects: ["load"])
        lines.append("Loop initialized, starting from: \(first)")
        lines.append("Next: \(Next<Int, String>.next(2, effects: ["save"]))")
        lines.append("Next: \(Next<Int, String>.dispatchEffects(["save"]))")
        lines.append("Next: \(Next<Int, String>.noChange)")
        XCTAssertEqual(
            lines,
            [
                #"Loop initialized, starting from: First<Int, String>(model: 1, effects: ["load"])"#,
                #"Next: (2, ["save"])"#,
                #"Next: (nil, ["save"])"#,
                "Next: (nil, [])",
            ])
        XCTAssertEqual(
            String(reflecting: first), #"MobiusCore.First<Swift.Int, Swift.String>(model: 1, effects: ["load"])"#)
    }
}
