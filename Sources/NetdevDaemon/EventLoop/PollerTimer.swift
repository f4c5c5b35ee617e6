internal import CLinux
import Dispatch
import Locking

#if canImport(Glibc)
import Glibc
#endif

/// A one-shot timer served by the ``Poller`` (a timerfd): arming and disarming it are system calls on the caller's
/// thread, with no other thread woken. Its handler runs on the queue it was made with.
///
/// Contract: ``schedule(atUptimeNanoseconds:)`` replaces the deadline set before; ``disarm()`` cancels it; the
/// handler runs at most once per deadline, at or after it. Times are `CLOCK_MONOTONIC` (``now()``).
final class PollerTimer: Sendable {
    /// The timerfd, closed when the last reference goes: the timer's and that of a handler already on its way to
    /// the queue, which then reads from it safely even after the timer itself is gone.
    private final class Descriptor: Sendable {
        let value: Int32

        init(_ value: Int32) {
            self.value = value
        }

        deinit {
            close(value)
        }
    }

    private let descriptor: Descriptor
    private let token: UInt64

    /// A disarmed timer whose `handler` runs on `queue`; `nil` when the kernel refuses a timerfd or the poller.
    init?(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        let value = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard value >= 0 else { return nil }
        let descriptor = Descriptor(value)
        guard
            let token = Poller.shared?.register(
                value, queue: queue,
                handler: {
                    var expirations: UInt64 = 0
                    // Nothing to read: disarmed or re-armed for later since the readiness was reported.
                    guard read(descriptor.value, &expirations, 8) == 8 else { return }
                    handler()
                })
        else { return nil }
        self.descriptor = descriptor
        self.token = token
    }

    deinit {
        Poller.shared?.unregister(token)
    }

    /// `CLOCK_MONOTONIC` now, in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Fires at `nanoseconds` (``now()``'s clock); a time already past fires at once.
    func schedule(atUptimeNanoseconds nanoseconds: UInt64) {
        var setting = itimerspec()
        // Zero would disarm: the earliest time there is means "now". Past 2^62 ns (146 years) is "never".
        let at = min(max(nanoseconds, 1), 1 << 62)
        setting.it_value = timespec(tv_sec: Int(at / 1_000_000_000), tv_nsec: Int(at % 1_000_000_000))
        timerfd_settime(descriptor.value, Int32(TFD_TIMER_ABSTIME), &setting, nil)
    }

    /// Will not fire until scheduled again.
    func disarm() {
        var setting = itimerspec()
        timerfd_settime(descriptor.value, 0, &setting, nil)
    }
}
