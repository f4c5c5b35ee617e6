public import MobiusCore

/// Everything the session asks the outside world to do. The daemon's effect handlers carry them out and report
/// back with events.
@CasePathable
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
    /// Stop these running hook runs (SIGTERM, then SIGKILL); each still answers with its result.
    case cancelHooks([Int])
    /// Start (or restart) a timer; it answers with ``Event/timerFired(_:)``.
    case startTimer(TimerID, milliseconds: Int)
    /// Cancel a timer, if it runs.
    case cancelTimer(TimerID)
    /// Exit the process with this status.
    case exit(status: Int32)
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
