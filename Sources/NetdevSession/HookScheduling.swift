import Syslog

/// Hook scheduling as pure bookkeeping: one run at a time per subject and in order, up to the configured number
/// of subjects at once, and queued runs coalesced by the rules of ``HookEvent/Lifecycle`` so that a burst runs
/// each subject's hooks for its newest state without ever losing (or inventing) an `added` or a `removed`.
extension Transition {
    /// Queues `event`'s hooks for `link`, unless no hook is installed (``Model/hooksInstalled``).
    mutating func enqueueLinkRun(_ link: Link, event: HookEvent, previousState: OperationalState?) {
        guard model.hooksInstalled else { return }
        let subject = HookSubject.link(index: link.index)
        guard let (event, replaced) = coalesce(subject: subject, event: event, name: link.name) else { return }
        // Changes merged into a waiting change start from the state the hooks were last told about.
        var previous = previousState?.rawValue
        if event != .linkAdded, let replaced, replaced.event == .linkState {
            previous = replaced.environment.first { $0.name == LogField.Name.previousOperState }?.value ?? previous
            if event == .linkState && previous == link.operationalState.rawValue {
                cancel(replaced, reason: "\(link.name) is back in the state its hooks last saw")
                return
            }
        }
        var environment = [
            LogField("NETDEVD_EVENT", event.rawValue),
            LogField(LogField.Name.ifname, link.name),
            LogField(LogField.Name.ifindex, String(link.index)),
            LogField(LogField.Name.operState, event == .linkRemoved ? "removed" : link.operationalState.rawValue),
        ]
        if event != .linkAdded, let previous {
            environment.append(LogField(LogField.Name.previousOperState, previous))
        }
        environment.append(LogField("NETDEVD_ADDRESSES", link.addresses.map(\.cidr).joined(separator: " ")))
        environment.append(LogField(LogField.Name.onlineState, model.onlineState.rawValue))
        queue(
            subject: subject, event: event, name: link.name, environment: environment, link: link, replacing: replaced)
    }

    /// Queues `event`'s hooks for `device`, unless no hook is installed (``Model/hooksInstalled``).
    mutating func enqueueDeviceRun(_ device: Device, event: HookEvent, previousPath: String? = nil) {
        guard model.hooksInstalled else { return }
        let subject = HookSubject.device(syspath: device.syspath)
        guard let (event, replaced) = coalesce(subject: subject, event: event, name: device.syspath) else { return }
        var environment = [
            LogField("NETDEVD_EVENT", event.rawValue),
            LogField(LogField.Name.devpath, device.syspath),
            LogField(LogField.Name.subsystem, device.subsystem),
        ]
        // The path the hooks last knew, when it differs: a move's, or the one a waiting move carried.
        let carried = replaced?.environment.first { $0.name == LogField.Name.previousDevpath }?.value
        if event != .deviceAdded, let previous = carried ?? previousPath {
            environment.append(LogField(LogField.Name.previousDevpath, previous))
        }
        environment.append(LogField(LogField.Name.onlineState, model.onlineState.rawValue))
        queue(
            subject: subject, event: event, name: device.syspath, environment: environment, device: device,
            replacing: replaced)
    }

    /// A device moved from `old`'s path: what waits for the old path goes with it to the new one. A waiting
    /// `added` stays an `added` (the hooks never heard of the old path); a waiting change or move merges into the
    /// `device-moved` run, which names the path the hooks last knew (and is a plain change when that is the new
    /// path again). When the move cannot be told in order (a run of the old path is running, so a run of the new
    /// path would overlap it; or the removal of an earlier device under the new path waits), each path gets what
    /// happened to it: the old one `device-removed`, the new one `device-added`.
    mutating func enqueueDeviceMove(_ device: Device, from old: Device) {
        let oldSubject = HookSubject.device(syspath: old.syspath)
        let pending = model.hooks.newestWaiting(for: oldSubject)
        if let pending, pending.event.lifecycle == .added {
            // Not dropped: it runs under the new path.
            model.hooks.remove(pending)
            enqueueDeviceRun(device, event: .deviceAdded)
            return
        }
        if model.hooks.running[oldSubject] != nil
            || model.hooks.newestWaiting(for: .device(syspath: device.syspath)) != nil
        {
            enqueueDeviceRun(old, event: .deviceRemoved)
            enqueueDeviceRun(device, event: .deviceAdded)
            return
        }
        var previousPath = old.syspath
        if let pending, pending.event.lifecycle == .changed {
            previousPath =
                pending.environment.first { $0.name == LogField.Name.previousDevpath }?.value ?? old.syspath
            cancel(pending, reason: "\(old.syspath) moved to \(device.syspath); its run has the news")
        }
        if previousPath == device.syspath {
            // Back under the path the hooks last knew: to them, a change.
            enqueueDeviceRun(device, event: .deviceChanged)
        } else {
            enqueueDeviceRun(device, event: .deviceMoved, previousPath: previousPath)
        }
    }

    mutating func enqueueOnlineRun(from old: OnlineState) {
        let new = model.onlineState
        guard let (_, replaced) = coalesce(subject: .host, event: .onlineState, name: "host") else { return }
        let previous =
            replaced?.environment.first { $0.name == LogField.Name.previousOnlineState }?.value ?? old.rawValue
        if previous == new.rawValue, let replaced {
            cancel(replaced, reason: "the host is back in the online state its hooks last saw")
            return
        }
        queue(
            subject: .host, event: .onlineState, name: "host",
            environment: [
                LogField("NETDEVD_EVENT", HookEvent.onlineState.rawValue),
                LogField(LogField.Name.onlineState, new.rawValue),
                LogField(LogField.Name.previousOnlineState, previous),
            ],
            replacing: replaced
        )
    }

    /// Applies the coalescing rules to a new `event` of `subject` against the newest run still waiting for it.
    /// Returns the event to queue (an `added` stays `added` whatever changes follow it) and the waiting run it
    /// replaces, or `nil` when nothing is to be queued: an `added` and a `removed` that meet before the `added`
    /// ran cancel out, and neither runs.
    private mutating func coalesce(
        subject: HookSubject, event: HookEvent, name: String
    ) -> (event: HookEvent, replacing: HookRun?)? {
        guard let pending = model.hooks.newestWaiting(for: subject) else { return (event, nil) }
        switch (pending.event.lifecycle, event.lifecycle) {
        case (.added, .changed):
            return (pending.event, pending)
        case (.added, .removed):
            // The removal goes with it (never queued, so not counted): its hooks never heard of the subject.
            cancel(
                pending,
                reason: "\(name) was removed before its \(pending.event.rawValue) hooks ran; no \(event.rawValue) run")
            return nil
        case (.removed, .added):
            // A new subject under a reused name or index: its run waits behind the old one's removal.
            return (event, nil)
        case (.removed, .changed):
            // A change of nothing the hooks know of: the subject's removal waits, and no new one was added.
            return nil
        case (.changed, .changed) where pending.event == .deviceMoved:
            // The hooks still have to hear of the move: it stays a move, with the newest state.
            return (pending.event, pending)
        case (.changed, _), (.added, .added), (.removed, .removed):
            return (event, pending)
        }
    }

    /// Queues a run, in place of `replaced` (the newest waiting run of its subject) when there is one.
    private mutating func queue(
        subject: HookSubject,
        event: HookEvent,
        name: String,
        environment: [LogField],
        link: Link? = nil,
        device: Device? = nil,
        replacing replaced: HookRun?
    ) {
        if let replaced {
            model.hooks.remove(replaced)
            countDrop(
                of: replaced.event, name: replaced.subjectName, run: replaced.id,
                reason: "its \(event.rawValue) run with newer state replaced it")
        }
        let run = HookRun(
            id: model.nextHookRunID, subject: subject, event: event, subjectName: name, environment: environment,
            link: link, device: device, timeoutMilliseconds: model.configuration.hookTimeoutMilliseconds
        )
        model.nextHookRunID += 1
        model.hooks.append(run)
        startWaitingRuns()
    }

    /// Removes a waiting run that will not run, and counts it.
    private mutating func cancel(_ run: HookRun, reason: String) {
        model.hooks.remove(run)
        countDrop(of: run.event, name: run.subjectName, run: run.id, reason: reason)
    }

    /// Counts a run that will never run: one debug entry each (a burst drops thousands); the journal gets a
    /// count at most every 10 s (``summariseDrops()``).
    private mutating func countDrop(of event: HookEvent, name: String, run: Int? = nil, reason: String = "") {
        model.counters.staleHookRunsDropped += 1
        if model.hooks.droppedSinceSummary == 0 {
            effects.append(.startTimer(.dropSummary, milliseconds: Self.dropSummaryMilliseconds))
        }
        model.hooks.droppedSinceSummary += 1
        guard makes(.debug) else { return }
        var fields = [LogField(LogField.Name.hookEvent, event.rawValue)]
        if let run { fields.append(LogField(LogField.Name.hookRun, String(run))) }
        log(
            .debug, .hookRunDropped,
            "Dropped the \(event.rawValue) hook run for \(name)" + (reason.isEmpty ? "" : ": \(reason)"), fields)
    }

    /// Runs start while the session runs, reloads or resyncs (not before READY=1, not while stopping).
    private var startsRuns: Bool {
        model.phase == .running || model.phase == .reloading || model.phase == .resyncing
    }

    /// A slot is free for one more subject's run.
    private var slotFree: Bool {
        model.hooks.running.count < max(1, model.configuration.hookParallelism)
    }

    /// Starts waiting runs, oldest first, while slots are free and their subjects are not already running.
    mutating func startWaitingRuns() {
        guard startsRuns else { return }
        var id = model.hooks.oldestQueued
        // Still in the run of ids with nothing waiting behind them: `oldestQueued` may move past them. Every run
        // queued can start, so the search stays there and passes each id once over the daemon's life.
        var atFront = true
        while id < model.nextHookRunID && slotFree {
            defer { id += 1 }
            guard let subject = model.hooks.queued[id] else {
                if atFront { model.hooks.oldestQueued = id + 1 }
                continue
            }
            guard start(subject) else {
                atFront = false
                continue
            }
            if atFront { model.hooks.oldestQueued = id + 1 }
        }
    }

    /// Starts the run waiting for `subject` when it can; `false` when it cannot (its subject runs, or none waits).
    private mutating func start(_ subject: HookSubject) -> Bool {
        guard let run = model.hooks.start(subject) else { return false }
        model.counters.hookRunsStarted += 1
        effects.append(.runHooks(run))
        return true
    }

    /// After a run ended: starts `next`, the run that waited for it, and then the runs queued. Older than every run
    /// queued when the search has passed its id, it takes the slot just freed (a search moved back to it would pass
    /// again every id given out since); when it cannot start now (stopping, or fewer slots since a reload), the
    /// search starts at it.
    private mutating func startWaitingRuns(after next: HookRun?) {
        if let next, next.id < model.hooks.oldestQueued, !(startsRuns && slotFree && start(next.subject)) {
            model.hooks.oldestQueued = next.id
        }
        startWaitingRuns()
    }

    mutating func hookRunFinished(_ result: HookRunResult) {
        guard let (subject, run) = model.hooks.running.first(where: { $0.value.id == result.runID }) else { return }
        let next = model.hooks.finish(subject)
        // Made only for the entries made (see below).
        let fields = {
            [LogField(LogField.Name.hookEvent, run.event.rawValue), LogField(LogField.Name.hookRun, String(run.id))]
        }
        if model.phase == .stopping {
            // Stopped by the stop (SIGTERM to each running run), or ended on its own meanwhile: a notice each.
            let ends = result.hooks.map { "\($0.name): \(describe($0.status))" }
            log(
                .notice, result.succeeded ? .hookRunFinished : .hookRunFailed,
                "Hooks for \(run.event.rawValue) \(run.subjectName) stopped with netdevd: \(ends.joined(separator: "; "))",
                fields())
        } else if result.succeeded {
            // Debug: hooks that did their job are not news (a burst runs thousands); failures are warnings, and
            // the counters in `netdevctl status` count every run. Made only when the daemon keeps debug entries.
            if makes(.debug) {
                let total = result.hooks.map(\.durationMilliseconds).reduce(0, +)
                log(
                    .debug, .hookRunFinished,
                    "Hooks for \(run.event.rawValue) \(run.subjectName) ran: \(quantity(result.hooks.count, "hook")) in "
                        + "\(total) ms",
                    fields())
            }
        } else {
            model.counters.hookRunsFailed += 1
            let failures = result.hooks.filter { $0.status != .exited(0) }.map { "\($0.name): \(describe($0.status))" }
            log(
                .warning, .hookRunFailed,
                "Hooks for \(run.event.rawValue) \(run.subjectName) failed: \(failures.joined(separator: "; "))",
                fields())
        }
        // Nothing starts while stopping; a run still waiting stays findable from the search's start.
        startWaitingRuns(after: next)
        if model.phase == .stopping {
            if model.hooks.running.isEmpty {
                effects.append(.cancelTimer(.stopDeadline))
                finishStop()
            }
            return
        }
    }

    /// How long after the first drop since the last count the next count is logged: a burst gets one entry per
    /// 10 s, not one per lull (with no hook installed, runs finish at once and the queue went idle hundreds of
    /// times in a burst, each time with a count).
    static let dropSummaryMilliseconds = 10_000

    /// One journal entry counts the runs dropped as stale since the last one: when the summary timer fires, and
    /// at the stop.
    mutating func summariseDrops() {
        guard model.hooks.droppedSinceSummary > 0 else { return }
        let dropped = model.hooks.droppedSinceSummary
        model.hooks.droppedSinceSummary = 0
        log(
            .info, .hookRunDropped,
            "Dropped \(quantity(dropped, "queued hook run")) before they ran: newer runs of the same subject replaced them, or "
                + "their subject was removed again (\(model.counters.staleHookRunsDropped) since start)",
            [
                LogField(LogField.Name.hookRunsDropped, String(dropped)),
                LogField(LogField.Name.staleHookRunsDropped, String(model.counters.staleHookRunsDropped)),
            ]
        )
    }

    private func describe(_ status: HookExitStatus) -> String {
        status.summary
    }
}
