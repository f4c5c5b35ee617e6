import Locking
import NetdevSession
import Syslog
import Systemd

/// The session's notifications, sent to the service manager, and what netdevd says when that fails.
///
/// A manager that stops reading is said once (warning), and once more when it reads again (notice); while it reads
/// nothing, the one notification waiting for room is the only one sent and later ones are dropped at once, so the
/// watchdog pings and the stop's drain never pile up behind it. Any other failure (NOTIFY_SOCKET pointing nowhere)
/// is said the first time only.
final class ServiceNotifications: Sendable {
    private let notifier = ServiceNotifier()
    /// The manager took no notification within the wait at the last send.
    private let stalled = Locked(false)
    /// A failure other than a stalled manager was logged already.
    private let warned = Locked(false)

    /// Sends `notifications` in one datagram, waiting at most 5 s; `log` takes what is to be said (priority, text).
    func send(_ notifications: [NetdevSession.Notification], log: (LogPriority, String) -> Void) {
        let fields = notifications.flatMap { notification -> [NotifyField] in
            switch notification {
            case .ready: [.ready]
            case .reloading: [.reloading(monotonicMicroseconds: ServiceNotifier.monotonicMicroseconds())]
            case .stopping: [.stopping]
            case .watchdog: [.watchdog]
            case .status(let text): [.status(text)]
            }
        }
        let wasStalled = stalled.withLock { $0 }
        do {
            try notifier.send(fields, waitMilliseconds: 5_000)
            if wasStalled {
                stalled.withLock { $0 = false }
                log(.notice, "The service manager takes notifications again")
            }
        } catch .managerNotReading(let milliseconds) {
            if !wasStalled {
                stalled.withLock { $0 = true }
                log(
                    .warning,
                    "The service manager took no notification for \(milliseconds) ms (its queue stayed full): "
                        + "notifications are dropped until it reads again. netdevd goes on")
            }
        } catch .stillWaiting {
            // Said once, when the manager stopped reading.
        } catch {
            let first = warned.withLock { warned -> Bool in
                defer { warned = true }
                return !warned
            }
            if first {
                log(.warning, "\(error); further notification failures are not logged")
            }
        }
    }
}
