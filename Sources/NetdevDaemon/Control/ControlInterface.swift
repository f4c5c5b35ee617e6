extension ControlService {
    /// The `io.netdevd` interface description: what clients read with `org.varlink.service.GetInterfaceDescription`,
    /// and what the server checks every call's parameters against.
    static let description = """
        # netdevd: the state of network links and devices, and a way to follow it. Every answer comes from a state
        # that has finished the start-up enumeration (a call made earlier waits for it); during a resync, from the
        # last complete one. Parameters are checked against this description: an unknown, missing or mistyped one
        # is org.varlink.service.InvalidParameter naming it.
        interface io.netdevd

        type Link (
          index: int,
          name: string,
          type: string,
          macAddress: ?string,
          mtu: ?int,
          operationalState: string,
          addresses: []string,
          gateways: []string
        )

        type Device (
          syspath: string,
          sysname: string,
          subsystem: string,
          devtype: ?string,
          devnode: ?string,
          driver: ?string,
          # udev's properties (ID_VENDOR, ID_MODEL, ID_SERIAL, DEVLINKS, ...).
          properties: [string]string
        )

        type State (
          sequence: int,
          phase: string,
          onlineState: string,
          links: []Link,
          # Every device, by subsystem then name: in Monitor's first reply only.
          devices: ?[]Device,
          deviceCounts: [string]int,
          resyncs: int,
          staleHookRunsDropped: int,
          # While the host is not online: what [Online] still waits for, one line each.
          onlineMissing: ?[]string
        )

        # The whole state now (without the devices: ListDevices lists them).
        method GetState() -> (state: State)

        # The links whose names match the glob `pattern` (all without one).
        method ListLinks(pattern: ?string) -> (links: []Link)

        # The devices of `subsystem` (all without one).
        method ListDevices(subsystem: ?string) -> (devices: []Device)

        # What one change altered: the links and devices that appeared or changed, the indexes (sysfs paths) of
        # those that went away, and the rest of the state in full. A renamed device: its old path went away and
        # it appeared under the new one.
        type Change (
          sequence: int,
          phase: string,
          onlineState: string,
          links: []Link,
          removedLinks: []int,
          devices: []Device,
          removedDevices: []string,
          deviceCounts: [string]int,
          resyncs: int,
          staleHookRunsDropped: int,
          onlineMissing: ?[]string
        )

        # With `more`: first the state now (`state`, with every device), then one reply per change (`change`), each
        # with a `sequence` one higher than the one before; applying the changes in order to the state gives the
        # daemon's state, links and devices.
        method Monitor() -> (state: ?State, change: ?Change)

        # netdevd's metrics in Prometheus' text exposition format: what [Metrics] TextfileDirectory= writes to
        # netdevd.prom for node_exporter's textfile collector.
        method GetMetrics() -> (text: string)

        # How many hooks run for each event (its own directory's, such as link-state.d, merged with hooks.d), and
        # how many files found in them are refused (their reason is in the journal when they would run).
        method CountHooks() -> (hooks: [string]int, refused: int)

        # Re-read the configuration (uid 0 only); answered when the reload ends, with the lines it ignored as
        # `file:line: message` (an unknown key, a value that does not parse), or ConfigurationRejected.
        method Reload() -> (warnings: []string)

        # The configuration could not be read at all; the previous one stays in force.
        error ConfigurationRejected (errors: []string)

        # The caller may not do this.
        error PermissionDenied (reason: string)

        # netdevd is not running its loop (it is stopping).
        error NotRunning ()

        # The monitor's client read too slowly; its connection is closed.
        error ClientTooSlow ()

        # The connection was refused: the caller's user, or all users other than root, hold as many connections as
        # netdevd allows. Sent in answer to the first call, then the connection is closed.
        error TooManyConnections (reason: string)
        """
}
