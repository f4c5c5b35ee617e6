/// Hook scheduling as pure bookkeeping: one run at a time per subject and in order, up to the configured number
/// of subjects at once, and a queued run replaced (dropped, counted, logged) when newer state of its subject
/// arrives before it started.
extension Transition {
    mutating func enqueueLinkRun(_ link: Link, event: HookEvent, previousState: OperationalState?) {
        var environment = [
            LogField("NETDEVD_EVENT", event.rawValue),
            LogField(LogField.Name.ifname, link.name),
            LogField(LogField.Name.ifindex, String(link.index)),
            LogField(LogField.Name.operState, event == .linkRemoved ? "removed" : link.operationalState.rawValue),
        ]
        if let previousState {
            environment.append(LogField(LogField.Name.previousOperState, previousState.rawValue))
        }
        environment.append(LogField("NETDEVD_ADDRESSES", link.addresses.map(\.cidr).joined(separator: " ")))
        environment.append(LogField(LogField.Name.onlineState, model.onlineState.rawValue))
        enqueue(subject: .link(index: link.index), event: event, name: link.name, environment: environment, link: link)
    }

    mutating func enqueueDeviceRun(_ device: Device, event: HookEvent) {
        enqueue(
            subject: .device(syspath: device.syspath), event: event, name: device.syspath,
            environment: [
                LogField("NETDEVD_EVENT", event.rawValue),
                LogField(LogField.Name.devpath, device.syspath),
                LogField(LogField.Name.subsystem, device.subsystem),
                LogField(LogField.Name.onlineState, model.onlineState.rawValue),
            ],
            device: device
        )
    }

    mutating func enqueue(
        subject: HookSubject,
        event: HookEvent,
        name: String,
        environment: [LogField],
        link: Link? = nil,
        device: Device? = nil
    ) {
        let run = HookRun(
            id: model.nextHookRunID, subject: subject, event: event, subjectName: name, environment: environment,
            link: link, device: device, timeoutMilliseconds: model.configuration.hookTimeoutMilliseconds
        )
        model.nextHookRunID += 1
        if let stale = model.hooks.waiting[subject] {
            model.counters.staleHookRunsDropped += 1
            if model.hooks.droppedSinceSummary == 0 {
                effects.append(.startTimer(.dropSummary, milliseconds: Self.dropSummaryMilliseconds))
            }
            model.hooks.droppedSinceSummary += 1
            // One line per drop only at debug: a burst drops thousands. The journal gets a count at most every
            // 10 s (summariseDrops).
            log(
                7, .hookRunDropped,
                "Dropped the queued \(stale.event.rawValue) hook run for \(stale.subjectName): newer state replaced it",
                [
                    LogField(LogField.Name.hookEvent, stale.event.rawValue),
                    LogField(LogField.Name.hookRun, String(stale.id)),
                ]
            )
            model.hooks.queued[stale.id] = nil
        }
        model.hooks.waiting[subject] = run
        model.hooks.queued[run.id] = subject
        startWaitingRuns()
    }

    /// Starts waiting runs, oldest first, while slots are free and their subjects are not already running.
    mutating func startWaitingRuns() {
        guard model.phase == .running || model.phase == .reloading || model.phase == .resyncing else { return }
        let slots = max(1, model.configuration.hookParallelism)
        var id = model.hooks.oldestQueued
        // Still in the run of ids with nothing waiting behind them: `oldestQueued` may move past them.
        var atFront = true
        while id < model.nextHookRunID && model.hooks.running.count < slots {
            defer { id += 1 }
            guard let subject = model.hooks.queued[id] else {
                if atFront { model.hooks.oldestQueued = id + 1 }
                continue
            }
            guard model.hooks.running[subject] == nil, let run = model.hooks.waiting.removeValue(forKey: subject)
            else {
                atFront = false
                continue
            }
            model.hooks.queued[id] = nil
            if atFront { model.hooks.oldestQueued = id + 1 }
            model.hooks.running[subject] = run
            model.counters.hookRunsStarted += 1
            effects.append(.runHooks(run))
        }
    }

    mutating func hookRunFinished(_ result: HookRunResult) {
        guard let (subject, run) = model.hooks.running.first(where: { $0.value.id == result.runID }) else { return }
        model.hooks.running[subject] = nil
        let fields = [
            LogField(LogField.Name.hookEvent, run.event.rawValue), LogField(LogField.Name.hookRun, String(run.id)),
        ]
        if result.succeeded {
            // Debug: hooks that did their job are not news (a burst runs thousands); failures are warnings, and
            // the counters in `netdevctl status` count every run.
            let total = result.hooks.map(\.durationMilliseconds).reduce(0, +)
            log(
                7, .hookRunFinished,
                "Hooks for \(run.event.rawValue) \(run.subjectName) ran: \(result.hooks.count) hook(s) in \(total) ms",
                fields)
        } else {
            model.counters.hookRunsFailed += 1
            let failures = result.hooks.filter { $0.status != .exited(0) }.map { "\($0.name): \(describe($0.status))" }
            log(
                4, .hookRunFailed,
                "Hooks for \(run.event.rawValue) \(run.subjectName) failed: \(failures.joined(separator: "; "))",
                fields)
        }
        if model.phase == .stopping {
            if model.hooks.running.isEmpty {
                effects.append(.cancelTimer(.stopDeadline))
                finishStop()
            }
            return
        }
        startWaitingRuns()
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
            6, .hookRunDropped,
            "Dropped \(dropped) queued hook run(s) that newer state of the same subject replaced before they ran "
                + "(\(model.counters.staleHookRunsDropped) since start)",
            [
                LogField(LogField.Name.hookRunsDropped, String(dropped)),
                LogField(LogField.Name.staleHookRunsDropped, String(model.counters.staleHookRunsDropped)),
            ]
        )
    }

    private func describe(_ status: HookExitStatus) -> String {
        switch status {
        case .exited(let code): "exited with status \(code)"
        case .killed(let signal): "killed by signal \(signal)"
        case .timedOut: "timed out"
        case .notStarted(let reason): "not started (\(reason))"
        }
    }
}
