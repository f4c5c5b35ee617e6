import HashTreeCollections
import Syslog

/// Enumeration, lost events, reload and stop: the phases of netdevd's life, decided here.
extension Transition {
    /// The snapshot arrived: replay what was buffered on it, then become ready (first time) or announce what
    /// changed while events were lost (resync).
    mutating func finishEnumeration(generation: Int, snapshot: Snapshot) {
        guard generation == model.enumerationGeneration, model.phase == .enumerating || model.phase == .resyncing
        else { return }
        let wasResync = model.phase == .resyncing
        let wasReread = model.rereading
        let previous = PreviousState(everythingIn: model)
        stateTouched = true
        change = .everything
        let tracked = Set(model.configuration.trackedSubsystems)
        model.links = TreeDictionary(snapshot.links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        model.devices = TreeDictionary(
            snapshot.devices.filter { tracked.contains($0.subsystem) }.map { ($0.syspath, $0) },
            uniquingKeysWith: { _, last in last }
        )
        for event in model.buffered {
            StateFold.apply(event, to: &model)
        }
        model.buffered = []
        model.phase = model.reloadInFlight ? .reloading : .running
        model.isEnumerated = true
        let (took, times) = Self.readTimes(snapshot.readTimes)
        if wasResync {
            announceChanges(from: previous, hooks: model.hooksInstalled)
            resumeDebounces()
            dispatchAfterResync()
            if wasReread {
                log(.notice, .reread, "Read links and devices again: \(statusLine)\(took)", times)
            } else {
                log(
                    .notice, .resynced, "Re-read the state after lost events: \(statusLine)\(took)",
                    [LogField(LogField.Name.resyncs, String(model.counters.resyncs))] + times
                )
            }
            effects.append(.notify([.status(statusLine)]))
        } else {
            let links = model.sortedLinks
            let eachLogged = links.count <= Self.startLinesLimit
            for link in links {
                activity.append(.linkAdded(index: link.index))
                guard eachLogged else { continue }
                log(
                    model.configuration.ignores(link.name) ? .debug : .info, .linkAdded,
                    "\(link.name): \(link.operationalState.rawValue)\(addressSuffix(link))", linkFields(link)
                )
            }
            let notEach =
                eachLogged
                ? "" : "; more than \(Self.startLinesLimit) links, not logged one by one (netdevctl links lists them)"
            log(
                .notice, .started, "netdevd started: \(statusLine)\(took)\(notEach)",
                [LogField(LogField.Name.onlineState, model.onlineState.rawValue)] + times
            )
            effects.append(.notify([.ready, .status(statusLine)]))
            dispatchAtStart()
        }
        rereadLater(ifChanged: snapshot.changedWhileRead)
        if model.reloadPending && !model.reloadInFlight {
            model.reloadPending = false
            beginReload(by: "a request made while enumerating")
        }
    }

    /// The most links a start logs one line each for. Above it the started entry says they were not: at 20,000
    /// links a line each was 20,000 entries, twice what the journal's queue holds, so most were dropped anyway (and
    /// said so), and making them delayed READY=1.
    static let startLinesLimit = 1_000

    /// What a reading's journal entry says of how long it took (`; read in 310 ms (rtnetlink), 620 ms (udev)`), and its
    /// fields; nothing when it was not measured.
    private static func readTimes(_ times: ReadTimes?) -> (text: String, fields: [LogField]) {
        guard let times else { return ("", []) }
        return (
            "; read in \(times.kernelMilliseconds) ms (rtnetlink), \(times.devicesMilliseconds) ms (udev)",
            [
                LogField(LogField.Name.kernelReadMilliseconds, String(times.kernelMilliseconds)),
                LogField(LogField.Name.devicesReadMilliseconds, String(times.devicesMilliseconds)),
            ]
        )
    }

    /// A snapshot the kernel kept changing while it was read may lack an entry that did not change (the changes
    /// themselves arrived as events and were replayed on it): read again after 1 s, then twice as long each time the
    /// kernel is still busy, up to 30 s. A consistent snapshot ends it.
    private mutating func rereadLater(ifChanged changed: [String]) {
        let timerPending = model.changedReadings > 0 && !model.rereading
        model.rereading = false
        guard !changed.isEmpty else {
            if timerPending {
                // A resync after lost events read everything before the timer fired.
                effects.append(.cancelTimer(.reread))
            }
            model.changedReadings = 0
            return
        }
        let seconds = 1 << min(model.changedReadings, 5)
        let delay = min(seconds, 30)
        model.changedReadings += 1
        log(
            .notice, .changedWhileRead,
            "The kernel kept changing \(changed.joined(separator: ", ")) while it was read; kept the last reading "
                + "and the changes since, reading again in \(delay) s"
        )
        effects.append(.startTimer(.reread, milliseconds: delay * 1_000))
    }

    mutating func enumerationFailed(generation: Int, reason: String) {
        guard generation == model.enumerationGeneration, model.phase == .enumerating || model.phase == .resyncing
        else { return }
        log(.error, .enumerationFailed, "Reading links and devices failed, retrying in 1 s: \(reason)")
        effects.append(.startTimer(.retryEnumeration, milliseconds: 1_000))
    }

    /// A monitor lost events: re-read everything, buffering as at start. A second loss during a resync restarts
    /// the resync.
    mutating func overflowed(_ source: MonitorSource) {
        switch model.phase {
        case .running, .reloading, .enumerating, .resyncing:
            break
        case .starting, .stopping, .stopped:
            return
        }
        model.counters.resyncs += 1
        model.rereading = false
        stateTouched = true
        if model.phase != .enumerating {
            model.phase = .resyncing
        }
        activity.append(.eventsLost(source: source))
        log(
            .warning, .resyncStarted, "The \(source.rawValue) monitor lost events; re-reading links and devices",
            [
                LogField(LogField.Name.monitor, source.rawValue),
                LogField(LogField.Name.resyncs, String(model.counters.resyncs)),
            ]
        )
        readEverything()
    }

    /// Starts reading links and devices under a new generation, so an answer to an older reading is ignored; what
    /// was held for that one is dropped (the new snapshot is newer).
    private mutating func readEverything() {
        model.buffered = []
        model.enumerationGeneration += 1
        effects.append(
            .enumerate(generation: model.enumerationGeneration, subsystems: model.configuration.trackedSubsystems))
    }

    mutating func timerFired(_ timer: TimerID) {
        switch timer {
        case .debounce(let subject):
            debounceExpired(subject)
        case .stopDeadline:
            guard model.phase == .stopping else { return }
            let running = model.hooks.running.values.map(\.id).sorted()
            if !running.isEmpty {
                // Cancelled once already: a second cancel is SIGKILL.
                effects.append(.cancelHooks(running))
                log(
                    .warning, .hookRunsCancelled,
                    "Stop timeout passed; killed \(quantity(running.count, "hook run")) still running (SIGKILL)"
                )
            }
            finishStop()
        case .dropSummary:
            summariseDrops()
        case .networkdWait(let index):
            networkdWaitExpired(index)
        case .reread:
            // A resync or reload's re-read in flight reads everything anyway; its snapshot decides again.
            guard model.phase == .running || model.phase == .reloading, model.changedReadings > 0 else { return }
            model.phase = .resyncing
            model.rereading = true
            stateTouched = true
            readEverything()
        case .retryEnumeration:
            guard model.phase == .enumerating || model.phase == .resyncing else { return }
            readEverything()
        }
    }

    // MARK: Reload

    mutating func requestReload(by requester: String) {
        switch model.phase {
        case .running where !model.reloadInFlight:
            beginReload(by: requester)
        case .running, .reloading, .enumerating, .resyncing, .starting:
            model.reloadPending = true
        case .stopping, .stopped:
            break
        }
    }

    mutating func beginReload(by requester: String) {
        model.reloadInFlight = true
        model.reloadCovers = model.reloadRequests
        if model.phase == .running {
            model.phase = .reloading
        }
        effects.append(.notify([.reloading, .status("Reloading configuration (\(requester))…")]))
        effects.append(.loadConfiguration)
    }

    mutating func configurationLoaded(_ configuration: Configuration, warnings: [Diagnostic]) {
        guard model.reloadInFlight else { return }
        let previousOnline = model.onlineState
        let subsystemsChanged = configuration.trackedSubsystems != model.configuration.trackedSubsystems
        let dispatching = !configuration.networkdDispatcherDirectories.isEmpty
        if dispatching != !model.configuration.networkdDispatcherDirectories.isEmpty {
            // Scripts run from the next change on; what links were last told is forgotten when they stop.
            effects.append(.watchNetworkdStates(dispatching))
            model.dispatcher = DispatcherBook()
            // The links' states as they are now count as told: scripts run from their next change on.
            model.dispatcher.adoptPending = dispatching
        }
        model.configuration = configuration
        model.reloadInFlight = false
        model.lastReload = ReloadOutcome(
            covers: model.reloadCovers, warnings: warnings.map(\.description), errors: [])
        for warning in warnings {
            log(.warning, .configurationWarning, warning.description, diagnosticFields(warning))
        }
        log(.notice, .reloaded, "Configuration reloaded: \(statusLine)")
        endReload()
        // A reload asked for meanwhile starts last: after this one's online change and re-read, which it would
        // otherwise skip (its phase would be reloading, and its configuration compared with this one's).
        defer { startPendingReload() }
        if model.phase == .running {
            announceOnlineChange(from: previousOnline)
        }
        if subsystemsChanged && (model.phase == .running) {
            model.phase = .resyncing
            model.counters.resyncs += 1
            readEverything()
        } else if subsystemsChanged && (model.phase == .resyncing || model.phase == .enumerating) {
            // The enumeration in flight reads (and filters uevents to) the old subsystems: start it again with the
            // new ones; its snapshot is newer than anything buffered.
            readEverything()
        }
    }

    mutating func configurationRejected(_ diagnostics: [Diagnostic]) {
        guard model.reloadInFlight else { return }
        model.reloadInFlight = false
        model.lastReload = ReloadOutcome(
            covers: model.reloadCovers, warnings: [], errors: diagnostics.map(\.description))
        let listed = diagnostics.map(\.description).joined(separator: "; ")
        log(
            .error, .reloadFailed, "Configuration not reloaded, the previous one stays in force: \(listed)",
            diagnostics.first.map(diagnosticFields) ?? []
        )
        endReload()
        startPendingReload()
    }

    private mutating func endReload() {
        if model.phase == .reloading {
            model.phase = .running
        }
        effects.append(.notify([.ready, .status(statusLine)]))
    }

    /// Starts the reload asked for while another ran, once netdevd runs again (a re-read in progress starts it when
    /// it ends).
    private mutating func startPendingReload() {
        if model.reloadPending && model.phase == .running && !model.reloadInFlight {
            model.reloadPending = false
            beginReload(by: "a request made during the previous reload")
        }
    }

    // MARK: Stop

    mutating func stop(reason: Event) {
        let signal = if case .signalReceived(let signal) = reason { signal.rawValue } else { "stop" }
        switch model.phase {
        case .stopped:
            return
        case .stopping:
            // A second signal: stop waiting for hooks; a second cancel is SIGKILL.
            let running = model.hooks.running.values.map(\.id).sorted()
            if !running.isEmpty {
                effects.append(.cancelHooks(running))
                log(
                    .warning, .hookRunsCancelled,
                    "\(signal) again; killed \(quantity(running.count, "running hook run")) (SIGKILL)")
            }
            finishStop()
            return
        default:
            break
        }
        model.phase = .stopping
        let dropped = model.hooks.removeAllWaiting()
        for subject in model.debouncing.keys.sorted(by: { $0.description < $1.description }) {
            effects.append(.cancelTimer(.debounce(subject)))
        }
        model.debouncing = [:]
        model.buffered = []
        effects.append(.notify([.stopping, .status("Stopping…")]))
        let running = model.hooks.running.values.map(\.id).sorted()
        log(
            .notice, .stopping,
            "\(signal) received; stopping"
                + (dropped > 0 ? ", \(quantity(dropped, "queued hook run")) dropped" : "")
                + (running.isEmpty ? "" : ", \(quantity(running.count, "running hook run")) sent SIGTERM"),
            [LogField(LogField.Name.phase, Phase.stopping.rawValue)]
        )
        if running.isEmpty {
            finishStop()
        } else {
            // SIGTERM to each run's process group now, SIGKILL after the grace; their ends are awaited (and
            // logged) until the stop timeout.
            effects.append(.cancelHooks(running))
            if let milliseconds = model.configuration.stopTimeoutMilliseconds {
                effects.append(.startTimer(.stopDeadline, milliseconds: milliseconds))
            }
        }
    }

    mutating func finishStop() {
        if model.hooks.droppedSinceSummary > 0 {
            effects.append(.cancelTimer(.dropSummary))
            summariseDrops()
        }
        model.phase = .stopped
        model.hooks = HookQueue()
        log(.notice, .stopped, "netdevd stopped")
        effects.append(.exit(status: 0))
    }

    private func diagnosticFields(_ diagnostic: Diagnostic) -> [LogField] {
        [
            LogField(LogField.Name.configFile, diagnostic.file),
            LogField(LogField.Name.configLine, String(diagnostic.line)),
        ]
    }
}
