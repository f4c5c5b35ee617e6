import NetdevSession
import Netlink
import Syslog
import Udev

#if canImport(Glibc)
import Glibc
#endif

/// The two kernel monitors netdevd reads, opened at start: the udev monitor (udevd's events, or the kernel's raw
/// uevents while udevd is not running) and the rtnetlink watcher. Opening them says which source is read and what
/// the receive buffers could be raised to.
struct KernelMonitors {
    let udev: UdevMonitor
    let rtnetlink: RouteWatcher
    /// Whether udevd ran when netdevd looked, at start.
    let udevdRunning: Bool

    /// Opens both for `options` and `configuration`'s tracked subsystems; `nil` (with the reason said) when the
    /// kernel refuses either socket.
    static func open(
        _ options: DaemonOptions, configuration: Configuration, say: (LogPriority, String) -> Void
    ) -> KernelMonitors? {
        // One look at udevd decides `auto` and what the start says about it.
        let udevd = UdevdStatus.probe()
        let source = options.udevSource == .auto ? (udevd == .running ? .udev : .kernel) : options.udevSource
        let monitor: UdevMonitor
        let watcher: RouteWatcher
        do {
            // Only the tracked subsystems' uevents reach netdevd (a socket filter); a reload that changes them
            // changes the filter before it re-enumerates.
            monitor = try UdevMonitor(
                source: source, subsystems: configuration.trackedSubsystems,
                receiveBufferBytes: Int32(clamping: options.receiveBufferBytes))
            watcher = try RouteWatcher(receiveBufferBytes: options.receiveBufferBytes)
        } catch {
            say(.error, "netdevd cannot start: \(error)")
            return nil
        }
        var sourceNote = ""
        if options.udevSource == .auto, monitor.source == .kernel, case .notRunning(let reason) = udevd {
            sourceNote =
                " (auto: udevd is not running, \(reason); raw kernel uevents without udev's properties until it starts)"
        }
        say(.info, "Monitoring udev source '\(monitor.source.rawValue)'\(sourceNote) and rtnetlink")
        if options.udevSource == .udev, case .notRunning(let reason) = udevd {
            say(.warning, DeviceEventSource.udevdAbsent(reason: reason))
        }
        if !monitor.receiveBufferRaised {
            // Unreadable in some sandboxes (ProcSubset=pid): then the value is left out, not shown as "?".
            let limit: String
            switch TextFile.bytes(at: "/proc/sys/net/core/rmem_max", limit: 64) {
            case .success(let bytes): limit = "=" + String(decoding: bytes, as: UTF8.self).trimmed
            case .failure: limit = ""
            }
            say(
                .info,
                "Receive buffers stay at the kernel's limit (net.core.rmem_max\(limit), doubled) instead of "
                    + "\(options.receiveBufferBytes) bytes: raising them needs CAP_NET_ADMIN. A burst larger than "
                    + "that is survived by re-reading the state; raise net.core.rmem_max to avoid it")
        }
        return KernelMonitors(udev: monitor, rtnetlink: watcher, udevdRunning: udevd == .running)
    }
}
