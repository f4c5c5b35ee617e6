public import Dispatch
import Locking
public import MobiusCore
public import NetdevSession
import NetdevWire
public import Varlink

/// The `io.netdevd` Varlink interface, served from the models the loop publishes: a query never waits on the
/// loop, and a slow monitor only fills its own connection's bounded buffer. Every answer comes from a model that has
/// finished the start-up enumeration: a call that arrives earlier (a socket-activated start) waits for it, however
/// long that takes (the client decides how long it waits). During a resync the loop's model is the last complete
/// one (events are buffered until the new snapshot replaces it whole), so calls are answered from it.
///
/// Its state is behind a ``Locked`` (a pthread mutex, which ThreadSanitizer sees: this is tested under it).
public final class ControlService: Sendable {
    private struct State {
        var latest: Model?
        /// Each monitor, and the sequence of the state it was sent first.
        var monitors: [ObjectIdentifier: (replier: VarlinkReplier, since: Int)] = [:]
        var dispatch: Consumer<Event>?
        /// Calls that came before the first model, answered when it comes.
        var parked: [@Sendable (Model) -> Void] = []
        /// Reload calls waiting for their outcome: the request number each got, and its answer.
        var reloads: [(request: Int, answer: @Sendable (ReloadOutcome?) -> Void)] = []
        /// Replies to calls without parameters, encoded once per change sequence (`GetState`, `ListDevices` and the
        /// first reply of `Monitor`): at 1,000 links a query is a copy, not an encoding.
        var replies: [CachedReply: (sequence: Int, bytes: [UInt8])] = [:]
        /// The `ListLinks` reply, kept across changes: the next encodes only the links changed since.
        var linkList = LinkListText()
        /// Writes the changes sent to monitors, carrying what the next change may share with the last one sent.
        var changeWriter = ChangeWriter()
        /// Models published for monitors and not yet sent, each with the one before it, in order.
        var unsent: [(previous: Model, model: Model)] = []
        /// The monitor queue has been asked to send `unsent` and has not taken it yet.
        var sendQueued = false
        /// When the monitor queue last took `unsent`, and the least time until it takes it again.
        var pacing = MonitorPacing(
            shortestMilliseconds: monitorSendIntervalMilliseconds,
            longestMilliseconds: monitorLongestSendIntervalMilliseconds)
    }

    /// The most changes whose storage the monitor queue hands back for the next batch: 8 pairs of models, 10 KB
    /// (a batch that large costs far more than allocating it).
    static let keptUnsent = 8

    /// The replies worth keeping: those every caller of a method without parameters gets.
    private enum CachedReply: Hashable {
        case state, devices, monitorState
    }

    private let state = Locked(State())
    /// Reload calls sent to the loop: the number of the last. Held while a call is numbered and sent, so the loop
    /// counts the calls in the order they are numbered (apart from `state`: sending may publish a model at once).
    private let reloadsSent = Locked(0)
    /// Where changes are encoded and queued to monitors, in the order models were published.
    private let monitorQueue = DispatchQueue(label: "netdevd.monitors")

    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock(body)
    }

    /// Told when a client is refused a call it may not make (a `Reload` by a user other than root), for the log.
    private let refused: @Sendable (String) -> Void
    /// One refusal line per 10 s: a client looping on Reload must not flood the journal.
    private let refusals = NoticeThrottle()

    /// Appends `GetMetrics`' reply parameters for a model, its metrics text as a JSON string
    /// (``MetricsExporter/replyParameters(_:clients:into:)``), to the reply's message.
    private let metrics: (@Sendable (Model, inout [UInt8]) -> Void)?

    /// How many hooks run for each event and how many files are refused, for `CountHooks`.
    private let hookCounts: (@Sendable () -> (hooks: [String: Int], refused: Int))?

    /// Told when a batch of changes has gone to the monitors, on the monitors' queue: the models it held are free.
    private let batchSent: @Sendable () -> Void
    /// The queue models are published on, or `nil`; see ``init(metricsReply:hookCounts:refused:batchSent:loopQueue:)``.
    private let loopQueue: DispatchQueue?

    /// A service with no model yet; `metricsReply` appends `GetMetrics`' reply parameters (not the bare text) and
    /// `hookCounts` answers `CountHooks` (without them those methods answer `NotRunning`); `refused` hears of calls
    /// refused for want of permission, `batchSent` of each batch of changes handed to the monitors (the monitors' queue
    /// can run behind the loop in a burst, and frees the models it held as it catches up). Models are published on
    /// `loopQueue` when given: a send due at once waits for that queue to finish its current work, so the changes of
    /// one pass of the loop go to the monitors together (sent at the first, the rest waited for the next interval).
    public init(
        metricsReply metrics: (@Sendable (Model, inout [UInt8]) -> Void)? = nil,
        hookCounts: (@Sendable () -> (hooks: [String: Int], refused: Int))? = nil,
        refused: @escaping @Sendable (String) -> Void = { _ in },
        batchSent: @escaping @Sendable () -> Void = {},
        loopQueue: DispatchQueue? = nil
    ) {
        self.loopQueue = loopQueue
        self.metrics = metrics
        self.hookCounts = hookCounts
        self.refused = refused
        self.batchSent = batchSent
    }

    /// The view to connect to the controller: it receives every model and sends `Reload` requests as events.
    public var view: AnyConnectable<Model, Event> {
        AnyConnectable { [self] consumer in
            withState { $0.dispatch = consumer }
            return Connection(
                acceptClosure: { [weak self] model in self?.publish(model) },
                disposeClosure: { [weak self] in
                    // The loop has stopped: no reload will end; those waiting are told so.
                    let waiting = self?.withState { state in
                        state.dispatch = nil
                        defer { state.reloads = [] }
                        return state.reloads.map(\.answer)
                    }
                    for answer in waiting ?? [] { answer(nil) }
                }
            )
        }
    }

    /// Sends every monitor what changed, built from what the session noted changed (``Model/lastChange``), so a change
    /// costs the same at 20,000 links as at 10. Changes published while the monitor queue is busy go out together, at
    /// most one send per ``monitorSendIntervalMilliseconds`` and further apart while changes keep coming
    /// (``MonitorPacing``): each monitor gets one write for what piled up in a burst, not one per change. Replies are
    /// queued under the lock that registers monitors, so a monitor gets its first state before any change, and skips
    /// the changes its first state already holds. Models from before the first enumeration finished (no links yet) are
    /// not published: a call made then waits.
    func publish(_ model: Model) {
        guard model.isEnumerated else { return }
        let (parked, sendAt) = withState { state -> ([@Sendable (Model) -> Void], DispatchTime?) in
            defer {
                // Replies kept for an older sequence are never sent again: at 20,000 links they are megabytes.
                if state.latest?.changeSequence != model.changeSequence { state.replies = [:] }
                state.linkList.note(model)
                state.latest = model
                state.parked = []
            }
            guard let latest = state.latest, latest.changeSequence != model.changeSequence,
                !state.monitors.isEmpty
            else { return (state.parked, nil) }
            state.unsent.append((latest, model))
            guard !state.sendQueued else { return (state.parked, nil) }
            state.sendQueued = true
            let now = DispatchTime.now()
            let sendAt = state.pacing.sendTime(publishedAt: now.uptimeNanoseconds)
            return (state.parked, sendAt > now.uptimeNanoseconds ? DispatchTime(uptimeNanoseconds: sendAt) : now)
        }
        for call in parked { call(model) }
        answerReloads(model)
        guard let sendAt else { return }
        if sendAt > .now() {
            monitorQueue.asyncAfter(deadline: sendAt) { [self] in sendUnsent() }
        } else if let loopQueue {
            loopQueue.async { [self] in monitorQueue.async { [self] in sendUnsent() } }
        } else {
            monitorQueue.async { [self] in sendUnsent() }
        }
    }

    /// Encodes the changes published since the last call, each once and straight into its reply's frame, and sends
    /// each monitor those after its first state, in one delivery: the same buffer for every monitor that had its
    /// first state before them (all of them but one that has just begun). On the monitor queue.
    private func sendUnsent() {
        // Swapped out, not copied, so that the emptied array below holds its storage alone and can keep it.
        var batch: [(previous: Model, model: Model)] = []
        var writer = withState { state in
            swap(&batch, &state.unsent)
            state.sendQueued = false
            state.pacing.sent(at: DispatchTime.now().uptimeNanoseconds)
            return state.changeWriter
        }
        var replies = ContinuingReplies()
        var sequences: [Int] = []
        sequences.reserveCapacity(batch.count)
        for (previous, model) in batch {
            writer.append(from: previous, to: model, to: &replies)
            sequences.append(model.changeSequence)
        }
        // The models are freed here, outside the lock; the array's storage goes back for the next batch (a batch of
        // a few changes allocated it again each time, on a heap a burst had fragmented).
        batch.removeAll(keepingCapacity: true)
        withState { state in
            state.changeWriter = writer
            if state.unsent.isEmpty && state.unsent.capacity == 0 && batch.capacity <= Self.keptUnsent {
                swap(&state.unsent, &batch)
            }
            var rests: [Int: ContinuingReplies] = [:]
            for monitor in state.monitors.values {
                let held = sequences.prefix { $0 <= monitor.since }.count
                if held == 0 {
                    monitor.replier.reply(continuingWith: replies)
                } else if held < sequences.count {
                    let rest = rests[held] ?? replies.dropFirst(held)
                    rests[held] = rest
                    monitor.replier.reply(continuingWith: rest)
                }
            }
        }
        batchSent()
    }

    /// The interface, for a ``VarlinkServer``.
    public var interface: VarlinkInterface {
        VarlinkInterface(
            name: "io.netdevd",
            description: Self.description,
            methods: [
                "GetState": { [self] _, _, replier in
                    withLatest { [self] model in
                        replier.reply(
                            encodedParameters: cached(.state, model) { ReportJSON.stateParameters(StateReport($0)) })
                    }
                },
                "ListLinks": { [self] call, _, replier in
                    // The server has checked the parameters against the description: `pattern` is a string or absent.
                    let pattern = call.parameters["pattern"]
                    withLatest { [self] model in
                        guard let glob = pattern?.stringValue else {
                            replier.reply(encodedParameters: linkList())
                            return
                        }
                        let links = model.sortedLinks.filter { Glob.matches(glob, $0.name) }.map(LinkReport.init)
                        replier.reply(encodedParameters: ReportJSON.linksParameters(links))
                    }
                },
                "ListDevices": { [self] call, _, replier in
                    let subsystem = call.parameters["subsystem"]
                    withLatest { [self] model in
                        guard let subsystem = subsystem?.stringValue else {
                            replier.reply(
                                encodedParameters: cached(.devices, model) {
                                    ReportJSON.devicesParameters(StateReport.devices($0))
                                })
                            return
                        }
                        let devices = StateReport.devices(model).filter { $0.subsystem == subsystem }
                        replier.reply(encodedParameters: ReportJSON.devicesParameters(devices))
                    }
                },
                "Monitor": { [self] call, _, replier in
                    guard call.more else {
                        replier.error(VarlinkStandardError.expectedMore)
                        return
                    }
                    // A monitor nobody hears (`oneway` too) would be followed for nothing: the call ends at once (its
                    // reply is not sent), and the connection's next call runs.
                    guard !call.oneway else {
                        replier.reply([:])
                        return
                    }
                    withLatest { [self] _ in
                        let key = ObjectIdentifier(replier)
                        withState { state in
                            guard let model = state.latest else { return }
                            let report = Self.cached(.monitorState, model, in: &state) {
                                ReportJSON.stateParameters(StateReport($0, devices: true))
                            }
                            state.monitors[key] = (replier, model.changeSequence)
                            replier.reply(encodedParameters: report, continues: true)
                        }
                        replier.onCancel { [weak self] in
                            _ = self?.withState { $0.monitors.removeValue(forKey: key) }
                        }
                    }
                },
                "GetMetrics": { [self] _, _, replier in
                    guard let metrics else {
                        replier.error("io.netdevd.NotRunning")
                        return
                    }
                    withLatest { model in
                        replier.reply(writingParameters: { message in metrics(model, &message) })
                    }
                },
                "CountHooks": { [self] _, _, replier in
                    guard let hookCounts else {
                        replier.error("io.netdevd.NotRunning")
                        return
                    }
                    // Read from the directories now: a hook dropped in counts at once, as it runs at once.
                    let counts = hookCounts()
                    replier.reply(
                        encodedParameters: Self.encoded(HookCountsReport(hooks: counts.hooks, refused: counts.refused))
                            ?? Self.emptyObject)
                },
                "Reload": { [self] _, peer, replier in
                    guard peer.uid == 0 else {
                        if let heldBack = refusals.admit("reload") {
                            refused(
                                "Refused Reload from \(peer): only root may reload netdevd"
                                    + NoticeThrottle.suffix(heldBack))
                        }
                        replier.error(
                            "io.netdevd.PermissionDenied",
                            ["reason": .string("Reload needs uid 0; you are uid \(peer.uid)")])
                        return
                    }
                    // Once the loop has published its first model (a call that came as netdevd started waits for
                    // it, as the queries do): from then on the view is connected until the loop stops. Answered when
                    // a reload that read the files after this request ends: with its warnings, or its errors.
                    withLatest { [self] model in
                        guard let dispatch = withState({ $0.dispatch }),
                            model.phase != .stopping && model.phase != .stopped
                        else {
                            replier.error("io.netdevd.NotRunning")
                            return
                        }
                        let answer: @Sendable (ReloadOutcome?) -> Void = { outcome in
                            guard let outcome else { return replier.error("io.netdevd.NotRunning") }
                            if outcome.errors.isEmpty {
                                replier.reply(["warnings": .array(outcome.warnings.map { .string($0) })])
                            } else {
                                replier.error(
                                    "io.netdevd.ConfigurationRejected",
                                    ["errors": .array(outcome.errors.map { .string($0) })])
                            }
                        }
                        reloadsSent.withLock { sent in
                            sent += 1
                            let request = sent
                            withState { $0.reloads.append((request, answer)) }
                            dispatch(.reloadRequested(by: "netdevctl (pid \(peer.pid), uid \(peer.uid))"))
                        }
                    }
                },
            ]
        )
    }

    /// Answers the Reload calls `model`'s last reload answers, and every one once netdevd stops (no reload comes).
    private func answerReloads(_ model: Model) {
        let stopping = model.phase == .stopping || model.phase == .stopped
        let answered = withState { state -> [@Sendable (ReloadOutcome?) -> Void] in
            let covered = model.lastReload?.covers ?? 0
            let due = state.reloads.filter { stopping || $0.request <= covered }
            state.reloads.removeAll { stopping || $0.request <= covered }
            return due.map(\.answer)
        }
        for answer in answered { answer(stopping ? nil : model.lastReload) }
    }

    /// How many Reload calls wait for their reload to end (for tests).
    public var waitingReloads: Int { withState { $0.reloads.count } }

    /// How many Monitor calls are followed now.
    public var monitorCount: Int { withState { $0.monitors.count } }

    /// How many calls wait for the first complete model (for tests).
    public var waitingCalls: Int { withState { $0.parked.count } }

    /// Runs `body` with the latest model: now, or when the loop publishes its first complete one.
    private func withLatest(_ body: @escaping @Sendable (Model) -> Void) {
        let model = withState { state -> Model? in
            if state.latest == nil { state.parked.append(body) }
            return state.latest
        }
        if let model { body(model) }
    }

    /// The `ListLinks` reply for the latest model: the one kept, or made from it outside the lock (so a query at
    /// 20,000 links never holds up the loop's publishing) and kept.
    private func linkList() -> [UInt8] {
        let (model, list) = withState { state in (state.latest, state.linkList) }
        guard let model else { return Self.emptyObject }
        if let text = list.current(for: model) { return text }
        let made = list.make(for: model)
        withState { state in state.linkList.keep(made) }
        return made.text
    }

    /// The reply `kind` for `model`: the one kept for its change sequence, or `parameters` written now and kept.
    private func cached(_ kind: CachedReply, _ model: Model, _ parameters: (Model) -> [UInt8]) -> [UInt8] {
        let hit = withState { state in state.replies[kind] }
        if let hit, hit.sequence == model.changeSequence {
            return hit.bytes
        }
        // Encoded outside the lock, so a query at 1,000 links never holds up the loop's publishing. Kept only if
        // no newer model was published meanwhile.
        let bytes = parameters(model)
        withState { state in
            if state.latest?.changeSequence == model.changeSequence {
                state.replies[kind] = (model.changeSequence, bytes)
            }
        }
        return bytes
    }

    /// ``cached(_:_:_:)`` for a caller that holds the lock already.
    private static func cached(
        _ kind: CachedReply, _ model: Model, in state: inout State, _ parameters: (Model) -> [UInt8]
    ) -> [UInt8] {
        if let hit = state.replies[kind], hit.sequence == model.changeSequence {
            return hit.bytes
        }
        let bytes = parameters(model)
        state.replies[kind] = (model.changeSequence, bytes)
        return bytes
    }

    private static let emptyObject = Array("{}".utf8)
}
