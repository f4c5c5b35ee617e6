public import Syslog
public import Systemd
public import Udev

/// The daemon's settings, from the command line.
public struct DaemonOptions: Sendable {
    /// The main configuration file (drop-ins are read from `<file>.d/`).
    public var configurationFile = "/etc/netdevd/netdevd.conf"
    /// The control socket's path (used by the control plane).
    public var socketPath = "/run/netdevd/io.netdevd"
    /// Which udev source to monitor.
    public var udevSource: UdevSource = .auto
    /// Where log entries go; `nil` chooses (journal if its socket exists, else the console).
    public var logTarget: JournalTarget?
    /// The least urgent journal priority written (`.debug` writes every entry).
    public var maximumPriority = LogPriority.info
    /// A file to append every processed event to, as JSON lines, for replay.
    public var recordFile: String?
    /// The hook directories, highest priority first.
    public var hookDirectories = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"]
    /// The monitors' receive buffer in bytes (large by default, so floods rarely overflow; tests make it small).
    public var receiveBufferBytes = 128 * 1024 * 1024
    /// How long a hook has between SIGTERM and SIGKILL.
    public var hookKillGraceMilliseconds = 5_000
    /// Where the hook runner is: the process that starts hooks (by default a child of netdevd's own).
    public var hookRunner = HookRunnerEndpoint.inProcess
    /// Replies a control client may leave unread before it is cut off, in bytes.
    public var monitorBufferBytes = 4 << 20

    /// The defaults.
    public init() {}
}
