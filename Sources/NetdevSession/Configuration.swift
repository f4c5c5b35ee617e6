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

/// A required interface: a glob over link names and, optionally, its own minimum state.
public struct InterfaceRequirement: Codable, Sendable, Equatable {
    /// A shell glob (`*`, `?`, `[abc]`, `[!a-z]`) over link names.
    public var pattern: String
    /// The state matching links must reach; the configuration's minimum when `nil`.
    public var minimumState: OperationalState?

    /// A requirement on links matching `pattern`.
    public init(pattern: String, minimumState: OperationalState? = nil) {
        self.pattern = pattern
        self.minimumState = minimumState
    }

    /// Parses `eth0` or `eth0:degraded`; `nil` when the state after the colon is not one of networkd's.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let pattern = parts.first, !pattern.isEmpty else { return nil }
        if parts.count == 2 {
            guard let state = OperationalState(name: parts[1]) else { return nil }
            self.init(pattern: pattern, minimumState: state)
        } else {
            self.init(pattern: pattern)
        }
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

/// Shell-style glob matching over names: `*` (any run), `?` (one character), `[abc]`, `[a-z]`, `[!...]`.
public enum Glob {
    /// `true` when `name` matches `pattern` as a whole.
    public static func matches(_ pattern: String, _ name: String) -> Bool {
        match(Array(pattern), 0, Array(name), 0)
    }

    private static func match(_ pattern: [Character], _ p: Int, _ name: [Character], _ n: Int) -> Bool {
        var p = p
        var n = n
        var starP = -1
        var starN = 0
        while n < name.count {
            if p < pattern.count, pattern[p] == "*" {
                starP = p
                starN = n
                p += 1
            } else if p < pattern.count, let next = single(pattern, p, name[n]) {
                p = next
                n += 1
            } else if starP >= 0 {
                p = starP + 1
                starN += 1
                n = starN
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" {
            p += 1
        }
        return p == pattern.count
    }

    /// If the pattern element at `p` matches `character`, the index after that element.
    private static func single(_ pattern: [Character], _ p: Int, _ character: Character) -> Int? {
        switch pattern[p] {
        case "?":
            return p + 1
        case "[":
            guard let close = pattern[(p + 1)...].dropFirst().firstIndex(of: "]") else {
                return character == "[" ? p + 1 : nil
            }
            var set = Array(pattern[(p + 1)..<close])
            let negated = set.first == "!" || set.first == "^"
            if negated {
                set.removeFirst()
            }
            var matched = false
            var index = 0
            while index < set.count {
                if index + 2 < set.count, set[index + 1] == "-" {
                    if set[index] <= character && character <= set[index + 2] {
                        matched = true
                    }
                    index += 3
                } else {
                    if set[index] == character {
                        matched = true
                    }
                    index += 1
                }
            }
            return matched != negated ? close + 1 : nil
        default:
            return pattern[p] == character ? p + 1 : nil
        }
    }
}
