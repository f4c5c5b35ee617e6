internal import CLinux
import Dispatch
import Locking
import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// netdevd: a MobiusController running the session, fed by the udev monitor, the rtnetlink watcher, signals and
/// the watchdog, with effect handlers for enumeration, the journal, notifications, configuration, hooks, timers and
/// exit. One serial queue is the event loop; blocking work (dumps, configuration files, journal writes) runs
/// elsewhere, and no hook is ever waited for.
///
/// ``run()`` builds the parts (``DaemonParts``), serves until the session exits, then stops them in order.
public final class Daemon: Sendable {
    let options: DaemonOptions
    /// The loop's queue: the main queue, whose thread serves the ``Poller`` and runs the loop, so a kernel
    /// message reaches the session's update with no thread woken; a queue of its own when the poller's thread
    /// runs already (never in netdevd itself, which makes its daemon first).
    private let loopQueue: DispatchQueue
    private let loopOnMainThread: Bool
    private let exitStatus = Locked<Int32?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// A daemon with `options`; nothing starts until ``run()``.
    public init(options: DaemonOptions) {
        self.options = options
        // Before the poller's epoll descriptor: it must not take the number of a closed standard descriptor.
        ProcessSetup.prepare()
        loopOnMainThread = Poller.shared?.claimMainThread() ?? false
        loopQueue = loopOnMainThread ? DispatchQueue.main : DispatchQueue(label: "netdevd.loop")
    }

    /// The exit status of a start refused for a configuration that cannot be read (sysexits' EX_CONFIG, which
    /// systemd shows as `status=78/CONFIG`); the unit's `RestartPreventExitStatus=` keeps systemd from retrying.
    public static let configurationUnreadable: Int32 = 78

    /// netdevd's version, as `org.varlink.service.GetInfo` and `netdevd_build_info` report it.
    public static let version = "0.1.0"

    /// Runs until the session exits; returns the exit status. Start-up problems (no netlink socket) are logged
    /// and give status 1; a configuration that cannot be read, ``configurationUnreadable``. Call it before starting
    /// any thread: it blocks the signals the loop handles (see ``ProcessSetup``), and a thread started earlier would
    /// still take them with the default action.
    public func run() -> Int32 {
        ProcessSetup.prepare()
        // One malloc arena: glibc gives each thread that contends for the heap an arena of its own, and after a
        // burst each holds its fragments (the RSS then stays far above what the model needs). netdevd's threads
        // allocate little at a time, so sharing one costs nothing measurable.
        mallopt(M_ARENA_MAX, 1)
        // Buffers of 256 KiB and more (a reply, a metrics text: MiB at 20,000 links) are mapped on their own and
        // unmapped when freed. glibc's default raises that threshold to the size of the last such buffer freed, so
        // every later one came from the heap and stayed there: at 20,000 links five `netdevctl metrics` left netdevd
        // at 70 MiB rather than 41, until the next kernel event's trim. Fixed, a fresh start there holds 33-37 MiB
        // (41 before) and 34-37 after the calls, for a page fault per 4 KiB of each such buffer.
        mallopt(M_MMAP_THRESHOLD, 256 * 1024)
        let journal = JournalSink(
            target: options.logTarget, maximumPriority: options.maximumPriority, loopQueue: loopQueue)
        // Build.
        guard let configuration = ConfigurationLoader(mainFile: options.configurationFile).loadAtStart(say: journal.say)
        else {
            return Self.configurationUnreadable
        }
        guard let kernel = KernelMonitors.open(options, configuration: configuration, say: journal.say) else {
            return 1
        }
        let parts = DaemonParts(
            options: options, configuration: configuration, kernel: kernel, journal: journal, loopQueue: loopQueue,
            exit: { [weak self] status in self?.exit(status: status) })
        // Serve.
        parts.start()
        #if DEBUG
        // Test builds only: SIGUSR1 blocks the loop queue for 3 s, so a test can see the watchdog pings stop.
        let blocker =
            getenv("NETDEVD_TEST_BLOCK_LOOP_ON_SIGUSR1").map { String(cString: $0) } == "1"
            ? blockLoopOnSIGUSR1(signalQueue: parts.signalQueue) : nil
        defer { blocker?.cancel() }
        #endif
        guard serveUntilExit(journal) else { return 1 }
        // Stop.
        parts.stop(loopOnMainThread: loopOnMainThread)
        return exitStatus.withLock { $0 } ?? 0
    }

    /// Runs the loop until the session exits: on the main thread, serving the poller, or waiting for the exit.
    /// `false` when the loop could not run.
    private func serveUntilExit(_ journal: JournalSink) -> Bool {
        guard loopOnMainThread else {
            finished.wait()
            return true
        }
        let served = Poller.shared?.runOnMainThread(mainQueue: loopQueue) { exitStatus.withLock { $0 != nil } }
        guard served == true else {
            journal.say(
                .error, "netdevd cannot run its event loop: the kernel refused to watch the main queue's descriptor")
            return false
        }
        // What the loop queued before it stopped (and what that queues in turn), as its own queue would run it.
        Poller.drainMainQueue()
        return true
    }

    #if DEBUG
    private func blockLoopOnSIGUSR1(signalQueue: DispatchQueue) -> DispatchSourceHandle {
        signal(SIGUSR1, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: signalQueue)
        let loopQueue = self.loopQueue
        source.setEventHandler { loopQueue.async { sleep(3) } }
        source.resume()
        return DispatchSourceHandle(source)
    }
    #endif

    /// Ends ``run()`` with `status`.
    func exit(status: Int32) {
        let first = exitStatus.withLock { current -> Bool in
            guard current == nil else { return false }
            current = status
            return true
        }
        if first {
            finished.signal()
            // Wakes the main thread, which then sees the status (see run()).
            if loopOnMainThread { loopQueue.async {} }
        }
    }
}
