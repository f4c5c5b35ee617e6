public import Dispatch
public import Locking

#if canImport(FoundationEssentials)
public import struct FoundationEssentials.UUID
#else
public import struct FoundationEssentials.UUID
#endif

/// Runs a Mobius loop on its own serial queue, so events may come from any thread, and lets views observe it.
///
/// Lifecycle: a controller is created stopped. ``start(file:line:)`` runs the ``Initiate`` function on the current model
/// and starts a loop; ``stop(file:line:)`` disposes the loop and remembers its last model, so the next ``start(file:line:)`` resumes
/// from it (and runs Initiate again). ``replaceModel(_:file:line:)`` changes the model while stopped.
///
/// Threading:
/// - every update, effect dispatch and model observation of the loop runs on `loopQueue`;
/// - events from views, event sources and effect handlers are carried to `loopQueue` in batches (one queued
///   block per batch, not per event), so a flood of events costs memory for the events alone;
/// - views receive models on `viewQueue`, every model in order, in batches too;
/// - events arriving while the controller is stopped, or queued when it stops, are dropped without error.
///
/// Misuse (starting twice, stopping or replacing the model at the wrong time, connecting a view while running)
/// is reported to ``MobiusHooks``. Views hold no reference to the controller: a controller that nobody else
/// keeps is released, and a running one is stopped first.
public final class MobiusController<Model: Sendable, Event: Sendable, Effect: Sendable>: Sendable {
    @usableFromInline
    struct Run: Sendable {
        @usableFromInline let loop: MobiusLoop<Model, Event, Effect>
        @usableFromInline let inbox: Mailbox<Event>
        /// The views' connections, opened by ``start(file:line:)`` and disposed when the loop stops.
        @usableFromInline let views: [ViewConnection]

        @usableFromInline
        init(loop: MobiusLoop<Model, Event, Effect>, inbox: Mailbox<Event>, views: [ViewConnection]) {
            self.loop = loop
            self.inbox = inbox
            self.views = views
        }

        /// Disposes the views' connections on `viewQueue`, after a model a view may be taking (so a connection is
        /// never disposed under its own `accept`); models not yet on their way to a view are dropped.
        @usableFromInline
        func disconnectViews(on viewQueue: DispatchQueue) {
            for view in views {
                view.outbox.close()
                let connection = view.connection
                viewQueue.async { connection.dispose() }
            }
        }
    }

    @usableFromInline
    enum Phase: Sendable {
        case stopped(Model)
        case starting(Model)
        case running(Run)
        case stopping(Run)
    }

    /// A connected view: connected to the loop while it runs, as in Mobius.swift.
    @usableFromInline
    struct View: Sendable {
        @usableFromInline let id: UUID
        @usableFromInline let connectable: AnyConnectable<Model, Event>

        @usableFromInline
        init(id: UUID, connectable: AnyConnectable<Model, Event>) {
            self.id = id
            self.connectable = connectable
        }
    }

    /// A view's connection for one run of the loop, and the mailbox carrying models to it on the view queue.
    @usableFromInline
    struct ViewConnection: Sendable {
        @usableFromInline let connection: Connection<Model>
        @usableFromInline let outbox: Mailbox<Model>

        @usableFromInline
        init(connection: Connection<Model>, outbox: Mailbox<Model>) {
            self.connection = connection
            self.outbox = outbox
        }
    }

    @usableFromInline
    struct State: Sendable {
        @usableFromInline var phase: Phase
        @usableFromInline var views: [View] = []

        @usableFromInline
        init(phase: Phase) {
            self.phase = phase
        }
    }

    @usableFromInline let builder: Mobius.Builder<Model, Event, Effect>
    @usableFromInline let initiate: Initiate<Model, Effect>?
    @usableFromInline let loopQueue: DispatchQueue
    @usableFromInline let targetQueue: DispatchQueue
    @usableFromInline let viewQueue: DispatchQueue
    @usableFromInline let state: Locked<State>
    @usableFromInline let onLoopQueueKey = DispatchSpecificKey<Bool>()

    init(
        builder: Mobius.Builder<Model, Event, Effect>,
        initialModel: Model,
        initiate: Initiate<Model, Effect>?,
        loopQueue: DispatchQueue,
        viewQueue: DispatchQueue
    ) {
        self.builder = builder
        self.initiate = initiate
        self.targetQueue = loopQueue
        self.loopQueue = DispatchQueue(label: "MobiusController.loop", target: loopQueue)
        self.viewQueue = viewQueue
        self.state = Locked(State(phase: .stopped(initialModel)))
        self.loopQueue.setSpecific(key: onLoopQueueKey, value: true)
    }

    deinit {
        // Disposed here, as stop() would, without waiting for the loop queue (a loop may be disposed from any thread):
        // releasing the last reference never deadlocks on it, and the effect handler is free at once for a new loop.
        let run = state.withLock { state -> Run? in
            guard case .running(let run) = state.phase else { return nil }
            return run
        }
        guard let run else { return }
        run.inbox.close()
        run.loop.dispose()
        run.disconnectViews(on: viewQueue)
    }

    /// `true` between ``start(file:line:)`` and ``stop(file:line:)``.
    public var running: Bool {
        state.withLock { state in
            if case .stopped = state.phase { return false }
            return true
        }
    }

    /// The current model: the loop's latest while running, the remembered one while stopped.
    public var model: Model {
        let phase = state.withLock { $0.phase }
        switch phase {
        case .stopped(let model):
            return model
        case .starting(let model):
            return model
        case .running(let run), .stopping(let run):
            return run.loop.latestModel
        }
    }

    /// Connects a view: from each ``start(file:line:)`` to the matching ``stop(file:line:)`` it has a connection of its own, which
    /// receives every model on the view queue and whose events go to the loop; the connection is disposed when
    /// the loop stops (as in Mobius.swift). Several views may be connected; the result identifies this one for
    /// ``disconnectView(id:file:line:)``. Connecting while running is a programming error.
    @discardableResult
    public func connectView<ViewConnectable: Connectable>(
        _ connectable: ViewConnectable,
        file: StaticString = #file,
        line: UInt = #line
    ) -> UUID where ViewConnectable.Input == Model, ViewConnectable.Output == Event {
        let view = View(id: UUID(), connectable: AnyConnectable(connectable))
        let connected = state.withLock { state -> Bool in
            guard case .stopped = state.phase else { return false }
            state.views.append(view)
            return true
        }
        guard connected else {
            MobiusHooks.errorHandler("\(Self.self): cannot connect a view while running", file, line)
        }
        return view.id
    }

    /// Disconnects the one connected view. Calling it while running, with no view, or with several views
    /// connected is a programming error.
    public func disconnectView(file: StaticString = #file, line: UInt = #line) {
        disconnect(file: file, line: line) { views in
            switch views.count {
            case 1: return .success(0)
            case 0: return .failure(DisconnectError(problem: "no view is connected"))
            default: return .failure(DisconnectError(problem: "several views are connected; pass the view's id"))
            }
        }
    }

    /// Disconnects the view that ``connectView(_:file:line:)`` identified with `id`. Calling it while running or
    /// with an unknown id is a programming error.
    public func disconnectView(id: UUID, file: StaticString = #file, line: UInt = #line) {
        disconnect(file: file, line: line) { views in
            guard let index = views.firstIndex(where: { $0.id == id }) else {
                return .failure(DisconnectError(problem: "no view has id \(id)"))
            }
            return .success(index)
        }
    }

    /// A reason a view cannot be disconnected.
    private struct DisconnectError: Error {
        let problem: String
    }

    /// Removes the view `choose` picks, checking in the same critical section that the controller is stopped.
    private func disconnect(
        file: StaticString,
        line: UInt,
        choose: ([View]) -> Result<Int, DisconnectError>
    ) {
        let outcome = state.withLock { state -> Result<View, DisconnectError> in
            guard case .stopped = state.phase else {
                return .failure(DisconnectError(problem: "the controller is running; call stop first"))
            }
            return choose(state.views).map { state.views.remove(at: $0) }
        }
        if case .failure(let error) = outcome {
            MobiusHooks.errorHandler("\(Self.self): cannot disconnect: \(error.problem)", file, line)
        }
    }

    /// Runs Initiate on the current model and starts the loop on the loop queue. Starting a running controller
    /// is a programming error.
    @inlinable
    public func start(file: StaticString = #file, line: UInt = #line) {
        let claimed = state.withLock { state -> (model: Model, views: [View])? in
            guard case .stopped(let model) = state.phase else { return nil }
            state.phase = .starting(model)
            return (model, state.views)
        }
        guard let (model, views) = claimed else {
            MobiusHooks.errorHandler("\(Self.self): cannot start a controller that is running", file, line)
        }
        let inbox = Mailbox<Event>(queue: loopQueue)
        let connections = views.map { view in
            // Straight into this run's inbox: held until the loop is there, dropped once this run has stopped.
            let connection = view.connectable.connect { event in inbox.post(event) }
            let outbox = Mailbox<Model>(queue: viewQueue, drainsUntilEmpty: true)
            outbox.open { model in connection.accept(model) }
            return ViewConnection(connection: connection, outbox: outbox)
        }
        let loop = onLoopQueue {
            builder.start(
                initiating: model,
                with: initiate,
                hop: { _ in { event in inbox.post(event) } },
                observer: { model in
                    for view in connections {
                        view.outbox.post(model)
                    }
                }
            )
        }
        inbox.open { event in loop.dispatchLocally(event) }
        state.withLock { $0.phase = .running(Run(loop: loop, inbox: inbox, views: connections)) }
    }

    /// Stops the loop and remembers its last model; events still queued are dropped. The views' connections are
    /// disposed on the view queue (models not yet delivered to a view are dropped), and ``start(file:line:)``
    /// connects them again. Stopping a controller that is not running is a programming error.
    public func stop(file: StaticString = #file, line: UInt = #line) {
        let claimed = state.withLock { state -> Run? in
            guard case .running(let run) = state.phase else { return nil }
            state.phase = .stopping(run)
            return run
        }
        guard let run = claimed else {
            MobiusHooks.errorHandler("\(Self.self): cannot stop a controller that is not running", file, line)
        }
        let model = shutDown(run)
        state.withLock { $0.phase = .stopped(model) }
    }

    /// Replaces the model the next ``start(file:line:)`` begins from. Calling it while running is a programming error.
    public func replaceModel(_ model: Model, file: StaticString = #file, line: UInt = #line) {
        let replaced = state.withLock { state -> Bool in
            guard case .stopped = state.phase else { return false }
            state.phase = .stopped(model)
            return true
        }
        guard replaced else {
            MobiusHooks.errorHandler("\(Self.self): cannot replace the model while running", file, line)
        }
    }

    /// Sends `event` to the loop from any thread; dropped when the controller is not running.
    @inlinable
    public func dispatchEvent(_ event: Event) {
        let inbox = state.withLock { state -> Mailbox<Event>? in
            guard case .running(let run) = state.phase else { return nil }
            return run.inbox
        }
        inbox?.post(event)
    }

    @discardableResult
    private func shutDown(_ run: Run) -> Model {
        run.inbox.close()
        let model = onLoopQueue {
            run.loop.dispose()
            return run.loop.latestModel
        }
        run.disconnectViews(on: viewQueue)
        return model
    }

    /// Runs `work` on the loop queue and waits for it: inline when already there (an effect handler stopping the
    /// controller), or on the main thread when the loop queue targets the main queue (the main queue is serial and
    /// runs only there, so nothing of the loop can run meanwhile; a daemon that serves the main queue from its own
    /// event loop starts and stops its controller there); otherwise synchronously. Waiting from another queue the
    /// loop queue targets would deadlock, so that is a precondition failure, as in the reference.
    @usableFromInline
    func onLoopQueue<T>(_ work: () -> T) -> T {
        if DispatchQueue.getSpecific(key: onLoopQueueKey) == true {
            return work()
        }
        if MainQueue.isMain(targetQueue), MainQueue.isCurrent {
            return work()
        }
        dispatchPrecondition(condition: .notOnQueue(targetQueue))
        return loopQueue.sync(execute: work)
    }
}

/// Tells the main queue from other queues, and whether the caller runs on it (a queue-specific value set on the
/// main queue once): for code that serves the main queue from an event loop of its own and must not wait for it
/// from its own thread, as ``MobiusController`` does when its loop queue targets the main queue.
public enum MainQueue {
    @usableFromInline static let key: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// `queue` is the main queue (not one that targets it).
    public static func isMain(_ queue: DispatchQueue) -> Bool {
        queue.getSpecific(key: key) == true
    }

    /// The caller runs on the main queue (the main thread), or on a queue that targets it.
    public static var isCurrent: Bool {
        DispatchQueue.getSpecific(key: key) == true
    }
}
