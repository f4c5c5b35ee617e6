/// Everything the session asks the outside world to do. The daemon's effect handlers carry them out and report
/// back with events.
public enum Effect: Sendable, Equatable {
    /// Read links, addresses, routes and devices; answer with ``Event/enumerated(generation:snapshot:)``.
    case enumerate(generation: Int, subsystems: [String])
    /// Write a journal entry.
    case log(LogEntry)
    /// Tell the service manager (sd_notify), in one datagram.
    case notify([Notification])
    /// Read the configuration files; answer with ``Event/configurationLoaded(_:warnings:)`` or
    /// ``Event/configurationRejected(_:)``.
    case loadConfiguration
    /// Run the hooks for an event; answer with ``Event/hookRunFinished(_:)``.
    case runHooks(HookRun)
    /// Run one state directory's networkd-dispatcher scripts for a link; nothing answers.
    case dispatch(DispatcherRun)
    /// Watch systemd-networkd's state files (`true`), answering with ``Event/networkdStatesRead(running:administrative:)``
    /// and ``Event/networkdStateChanged(index:administrative:)``, or stop watching them (`false`).
    case watchNetworkdStates(Bool)
    /// Stop these running hook runs (SIGTERM, then SIGKILL); each still answers with its result.
    case cancelHooks([Int])
    /// Start (or restart) a timer; it answers with ``Event/timerFired(_:)``.
    case startTimer(TimerID, milliseconds: Int)
    /// Cancel a timer, if it runs.
    case cancelTimer(TimerID)
    /// Exit the process with this status.
    case exit(status: Int32)
    /// Count what happened in this step (for the metrics); nothing answers.
    case noteActivity([Activity])
}

/// One field of a notification to the service manager. `reloading` gets its MONOTONIC_USEC from the clock when
/// sent, since the session never reads a clock.
public enum Notification: Sendable, Equatable {
    /// READY=1.
    case ready
    /// RELOADING=1 with MONOTONIC_USEC=now.
    case reloading
    /// STOPPING=1.
    case stopping
    /// WATCHDOG=1.
    case watchdog
    /// STATUS=text.
    case status(String)
}

/// Each case's associated values, `nil` for the other cases: what an effect router routes by
/// (`routeEffects(withParameters: \.logEntry)`), exactly one property per case with values.
extension Effect {
    /// The generation and subsystems of `enumerate`.
    public var enumeration: (generation: Int, subsystems: [String])? {
        if case .enumerate(let generation, let subsystems) = self { (generation, subsystems) } else { nil }
    }

    /// The activity of `noteActivity`.
    public var activity: [Activity]? {
        if case .noteActivity(let activity) = self { activity } else { nil }
    }

    /// The entry of `log`.
    public var logEntry: LogEntry? {
        if case .log(let entry) = self { entry } else { nil }
    }

    /// The notifications of `notify`.
    public var notifications: [Notification]? {
        if case .notify(let notifications) = self { notifications } else { nil }
    }

    /// The run of `runHooks`.
    public var hookRun: HookRun? {
        if case .runHooks(let run) = self { run } else { nil }
    }

    /// The run of `dispatch`.
    public var dispatcherRun: DispatcherRun? {
        if case .dispatch(let run) = self { run } else { nil }
    }

    /// Whether `watchNetworkdStates` starts or stops.
    public var networkdWatch: Bool? {
        if case .watchNetworkdStates(let on) = self { on } else { nil }
    }

    /// The run ids of `cancelHooks`.
    public var cancelledHookRuns: [Int]? {
        if case .cancelHooks(let ids) = self { ids } else { nil }
    }

    /// The timer and delay of `startTimer`.
    public var timerStart: (TimerID, milliseconds: Int)? {
        if case .startTimer(let timer, let milliseconds) = self { (timer, milliseconds) } else { nil }
    }

    /// The timer of `cancelTimer`.
    public var cancelledTimer: TimerID? {
        if case .cancelTimer(let timer) = self { timer } else { nil }
    }

    /// The status of `exit`.
    public var exitStatus: Int32? {
        if case .exit(let status) = self { status } else { nil }
    }
}
