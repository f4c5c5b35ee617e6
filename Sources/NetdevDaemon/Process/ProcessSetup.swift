#if canImport(Glibc)
import Glibc
#endif

/// What the process must be before anything else runs: done first in ``Daemon/run()``, before any thread starts
/// (threads inherit the signal mask of the thread that starts them).
///
/// - SIGTERM, SIGINT and SIGHUP are blocked in every thread from the first instruction: one that arrives while the
///   configuration loads or the socket binds stays pending (instead of killing netdevd with the default action)
///   and is handled once the loop runs, so a stop during start-up is still a clean stop with exit status 0.
///   Hooks start with an empty mask and default dispositions.
/// - SIGPIPE is ignored: a write to a pipe or socket whose reader is gone (standard error into a pipe that was
///   closed, a control client that went away) fails with EPIPE, which is handled, instead of killing netdevd.
/// - Descriptors 0, 1 and 2 are open: any of them closed by whoever started netdevd is opened on /dev/null, so a
///   socket netdevd creates later can never take number 2 and receive log lines meant for standard error.
enum ProcessSetup {
    /// The signals the loop handles; blocked from the start.
    static let handledSignals = [SIGTERM, SIGINT, SIGHUP]

    /// Blocks the handled signals, ignores SIGPIPE and fills closed standard descriptors.
    static func prepare() {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for signal in handledSignals { sigaddset(&blocked, signal) }
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        signal(SIGPIPE, SIG_IGN)
        for descriptor in Int32(0)...2 where fcntl(descriptor, F_GETFD) < 0 && errno == EBADF {
            let opened = open("/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY)
            // open returns the lowest free number, which is this one; anything else is not ours to keep.
            if opened >= 0 && opened != descriptor { close(opened) }
        }
    }
}
