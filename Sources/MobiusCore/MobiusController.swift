public import Dispatch

#if canImport(FoundationEssentials)
public import struct FoundationEssentials.UUID
#else
public import struct Foundation.UUID
#endif

/// Runs a Mobius loop on its own serial queue, so events may come from any thread, and lets views observe it.
///
/// Lifecycle: a controller is created stopped. ``start()`` runs the ``Initiate`` function on the current model
/// and starts a loop; ``stop()`` disposes the loop and remembers its last model, so the next ``start()`` resumes
/// from it (and runs Initiate again). ``replaceModel(_:)`` changes the model while stopped.
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

        @usableFromInline
        init(loop: MobiusLoop<Model, Event, Effect>, inbox: Mailbox<Event>) {
            self.loop = loop
            self.inbox = inbox
        }
    }

    @usableFromInline
    enum Phase: Sendable {
        case stopped(Model)
        case transitioning(Model)
        case running(Run)
    }

    @usableFromInline
    struct View: Sendable {
        @usableFromInline let id: UUID
        @usableFromInline let connection: Connection<Model>
        @usableFromInline let outbox: Mailbox<Model>

        @usableFromInline
        init(id: UUID, connection: Connection<Model>, outbox: Mailbox<Model>) {
            self.id = id
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
        self.loopQueue = DispatchQueue(label: "MobiusController.loop", target: loopQueue)
        self.viewQueue = viewQueue
        self.state = Locked(State(phase: .stopped(initialModel)))
        self.loopQueue.setSpecific(key: onLoopQueueKey, value: true)
    }

    deinit {
        let run = state.withLock { state -> Run? in
            guard case .running(let run) = state.phase else { return nil }
            return run
        }
        if let run {
            shutDown(run)
        }
        for view in state.withLock({ $0.views }) {
            view.connection.dispose()
        }
    }

    /// `true` between ``start()`` and ``stop()``.
    public var running: Bool {
        state.withLock { state in
            if case .running = state.phase { return true }
            return false
        }
    }

    /// The current model: the loop's latest while running, the remembered one while stopped.
    public var model: Model {
        let phase = state.withLock { $0.phase }
        switch phase {
        case .stopped(let model):
            return model
        case .running(let run):
            return run.loop.latestModel
        case .transitioning(let model):
            return model
        }
    }

    /// Connects a view: it receives every model on the view queue, and the events it sends go to the loop.
    /// Several views may be connected; the result identifies this one for ``disconnectView(id:file:line:)``.
    /// Connecting while running is a programming error.
    @discardableResult
    public func connectView<ViewConnectable: Connectable>(
        _ connectable: ViewConnectable,
        file: StaticString = #file,
        line: UInt = #line
    ) -> UUID where ViewConnectable.Input == Model, ViewConnectable.Output == Event {
        guard !running else {
            MobiusHooks.errorHandler("\(Self.self): cannot connect a view while running", file, line)
        }
        let connection = connectable.connect { [weak self] event in self?.dispatchEvent(event) }
        let outbox = Mailbox<Model>(queue: viewQueue)
        outbox.open { model in connection.accept(model) }
        let id = UUID()
        state.withLock { $0.views.append(View(id: id, connection: connection, outbox: outbox)) }
        return id
    }

    /// Disconnects the one connected view. Calling it while running, with no view, or with several views
    /// connected is a programming error.
    public func disconnectView(file: StaticString = #file, line: UInt = #line) {
        let views = state.withLock { $0.views }
        guard views.count == 1 else {
            let problem = views.isEmpty ? "no view is connected" : "several views are connected; pass the view's id"
            MobiusHooks.errorHandler("\(Self.self): cannot disconnect: \(problem)", file, line)
        }
        disconnectView(id: views[0].id, file: file, line: line)
    }

    /// Disconnects the view that ``connectView(_:file:line:)`` identified with `id`. Calling it while running or
    /// with an unknown id is a programming error.
    public func disconnectView(id: UUID, file: StaticString = #file, line: UInt = #line) {
        guard !running else {
            MobiusHooks.errorHandler(
                "\(Self.self): cannot disconnect a view while running; call stop first", file, line)
        }
        let removed = state.withLock { state -> View? in
            guard let index = state.views.firstIndex(where: { $0.id == id }) else { return nil }
            return state.views.remove(at: index)
        }
        guard let removed else {
            MobiusHooks.errorHandler("\(Self.self): cannot disconnect: no view has id \(id)", file, line)
        }
        removed.outbox.close()
        removed.connection.dispose()
    }

    /// Runs Initiate on the current model and starts the loop on the loop queue. Starting a running controller
    /// is a programming error.
    @inlinable
    public func start(file: StaticString = #file, line: UInt = #line) {
        let claimed = state.withLock { state -> (model: Model, views: [View])? in
            guard case .stopped(let model) = state.phase else { return nil }
            state.phase = .transitioning(model)
            return (model, state.views)
        }
        guard let (model, views) = claimed else {
            MobiusHooks.errorHandler("\(Self.self): cannot start a controller that is running", file, line)
        }
        let inbox = Mailbox<Event>(queue: loopQueue)
        let loop = onLoopQueue {
            let loop = builder.start(initiating: model, with: initiate) { _ in { event in inbox.post(event) } }
            loop.addObserver { model in
                for view in views {
                    view.outbox.post(model)
                }
            }
            return loop
        }
        inbox.open { event in loop.dispatchLocally(event) }
        state.withLock { $0.phase = .running(Run(loop: loop, inbox: inbox)) }
    }

    /// Stops the loop and remembers its last model; events still queued are dropped. Stopping a controller
    /// that is not running is a programming error.
    public func stop(file: StaticString = #file, line: UInt = #line) {
        let claimed = state.withLock { state -> Run? in
            guard case .running(let run) = state.phase else { return nil }
            state.phase = .transitioning(run.loop.latestModel)
            return run
        }
        guard let run = claimed else {
            MobiusHooks.errorHandler("\(Self.self): cannot stop a controller that is not running", file, line)
        }
        let model = shutDown(run)
        state.withLock { $0.phase = .stopped(model) }
    }

    /// Replaces the model the next ``start()`` begins from. Calling it while running is a programming error.
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
        return onLoopQueue {
            run.loop.dispose()
            return run.loop.latestModel
        }
    }

    @usableFromInline
    func onLoopQueue<T>(_ work: () -> T) -> T {
        if DispatchQueue.getSpecific(key: onLoopQueueKey) == true {
            return work()
        }
        return loopQueue.sync(execute: work)
    }
}
