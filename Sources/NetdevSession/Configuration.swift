/// What netdevd is configured to do: which links matter for "online", which subsystems to track, and how hooks
/// run. The daemon parses `netdevd.conf` into this value; the session decides only from it.
public struct Configuration: Codable, Sendable, Equatable {
    /// Links that must reach their minimum state for the host to be online, as shell globs with an optional
    /// `:state` (`eth0`, `wl*:degraded`). Empty: any one link that is not ignored will do.
    public var requiredInterfaces: [InterfaceRequirement]
    /// Links that never count and never run hooks, as shell globs. `lo` is always ignored for "online".
    public var ignoredInterfaces: [String]
    /// The state a required link (or, without requirements, any link) must reach.
    public var minimumOperationalState: OperationalState
    /// Which address families a `routable` link needs a global address of.
    public var requiredFamily: RequiredFamily
    /// The udev subsystems whose devices are tracked.
    public var trackedSubsystems: [String]
    /// How long one hook may run before it is stopped (SIGTERM, then SIGKILL), in milliseconds.
    public var hookTimeoutMilliseconds: Int
    /// How long a link's state must hold before its hooks run, in milliseconds; 0 runs them at once.
    public var debounceMilliseconds: Int
    /// How many subjects may run hooks at the same time.
    public var hookParallelism: Int
    /// How long a stop waits for running hooks to end after their SIGTERM before SIGKILL, in milliseconds; `nil`
    /// (`infinity`) waits for them however long they take (the service manager's own stop timeout still applies).
    public var stopTimeoutMilliseconds: Int?
    /// The directory netdevd writes `netdevd.prom` to for node_exporter's textfile collector; `nil` writes none.
    public var metricsTextfileDirectory: String?
    /// The user hooks run as (a name or a number; the hook runner resolves it); `nil`: the runner's own (root
    /// under systemd).
    public var hookUser: String?
    /// The group hooks run as; `nil`: the user's primary group.
    public var hookGroup: String?
    /// networkd-dispatcher's script directories (`/etc/networkd-dispatcher`, ...), highest priority first, whose
    /// `<state>.d` scripts netdevd runs as networkd-dispatcher would; empty: none (``DispatcherRun``).
    public var networkdDispatcherDirectories: [String] = []

    /// The defaults: track `net`, `block`, `usb`, `tty`; online when at least one non-loopback link
    /// is routable; hooks time out after 30 s, no debounce, 4 subjects at a time; stop waits 10 s; no metrics file.
    public init(
        requiredInterfaces: [InterfaceRequirement] = [],
        ignoredInterfaces: [String] = [],
        minimumOperationalState: OperationalState = .routable,
        requiredFamily: RequiredFamily = .any,
        trackedSubsystems: [String] = ["net", "block", "usb", "tty"],
        hookTimeoutMilliseconds: Int = 30_000,
        debounceMilliseconds: Int = 0,
        hookParallelism: Int = 4,
        stopTimeoutMilliseconds: Int? = 10_000,
        metricsTextfileDirectory: String? = nil
    ) {
        self.requiredInterfaces = requiredInterfaces
        self.ignoredInterfaces = ignoredInterfaces
        self.minimumOperationalState = minimumOperationalState
        self.requiredFamily = requiredFamily
        self.trackedSubsystems = trackedSubsystems
        self.hookTimeoutMilliseconds = hookTimeoutMilliseconds
        self.debounceMilliseconds = debounceMilliseconds
        self.hookParallelism = hookParallelism
        self.stopTimeoutMilliseconds = stopTimeoutMilliseconds
        self.metricsTextfileDirectory = metricsTextfileDirectory
    }

    /// `true` when `name` matches one of the ignored globs.
    public func ignores(_ name: String) -> Bool {
        ignoredInterfaces.contains { Glob.matches($0, name) }
    }
}

/// Which address families a link needs a global address of to count as routable for "online".
public enum RequiredFamily: String, Codable, Sendable, CaseIterable {
    /// Either family.
    case any
    /// IPv4.
    case ipv4
    /// IPv6.
    case ipv6
    /// Both.
    case both
}
