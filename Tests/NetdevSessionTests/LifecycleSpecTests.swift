import MobiusCore
import MobiusTest
import NetdevSession
import Testing

/// The phases of netdevd's life, every step checked whole: the exact model after it and the exact effects.
@Suite("Lifecycle, step by step")
struct LifecycleSpecTests {
    static let lo = Fixture.loopback
    static let eth0 = Fixture.routable(2, "eth0")
    static let enumerating = "Enumerating links and devices…"

    @Test("a start: the status and the enumeration, WATCHDOG=1 meanwhile, READY=1 with the snapshot's status")
    func start() {
        let disk = Device(syspath: "/sys/devices/virtual/block/loop0", sysname: "loop0", subsystem: "block")
        var enumerating = Model()
        enumerating.phase = .enumerating
        enumerating.enumerationGeneration = 1
        enumerating.changeSequence = 1
        InitSpec(Session.initiate).when(Model())
            .then(
                assertThatFirst(
                    hasModel(enumerating),
                    hasExactlyEffects([
                        .notify([.status(Self.enumerating)]), .enumerate(generation: 1, subsystems: Fixture.tracked),
                    ])))
        var store = SessionStore(enumerating)
        store.sendWithoutModel(.watchdogTick, effects: [.notify([.watchdog])])
        store.send(
            .enumerated(generation: 1, snapshot: Snapshot(links: [Self.lo, Self.eth0], devices: [disk])),
            effects: [
                Fixture.log(.info, .linkAdded, "lo: carrier (127.0.0.1/8)", Fixture.fields(Self.lo)),
                Fixture.log(.info, .linkAdded, "eth0: routable (192.0.2.10/24)", Fixture.fields(Self.eth0)),
                Fixture.log(
                    .notice, .started, "netdevd started: 2 links (1 routable), 1 device; online",
                    [LogField("NETDEVD_ONLINE_STATE", "online")]),
                .notify([.ready, .status("2 links (1 routable), 1 device; online")]),
                .noteActivity([.linkAdded(index: 1), .linkAdded(index: 2)]),
            ]
        ) {
            $0.phase = .running
            $0.isEnumerated = true
            $0.links = [1: Self.lo, 2: Self.eth0]
            $0.devices = [disk.syspath: disk]
            $0.changeSequence = 2
        }
        store.sendWithoutModel(.watchdogTick, effects: [.notify([.watchdog])])
    }

    @Test("a start logs a line for each of 1,000 links; with more, the started entry says they are not logged")
    func startWithManyLinks() {
        for count in [1_000, 1_001] {
            let links = (1...Int32(count)).map { Fixture.routable($0, "veth\($0)") }
            var model = Session.initiate(Model()).model
            model.enumerationGeneration = 1
            let next = Session.update(model, .enumerated(generation: 1, snapshot: Snapshot(links: links, devices: [])))
            let logs = Fixture.logs(next.effects)
            #expect(logs.filter { $0.kind == .linkAdded }.count == (count == 1_000 ? 1_000 : 0))
            let started = logs.filter { $0.kind == .started }.map(\.message)
            let note =
                count == 1_000 ? "" : "; more than 1000 links, not logged one by one (netdevctl links lists them)"
            #expect(started == ["netdevd started: \(count) links (\(count) routable), 0 devices; online\(note)"])
            #expect(next.effects.contains(.noteActivity(links.map { .linkAdded(index: $0.index) })))
        }
    }

    @Test("changes during the enumeration are buffered silently, then replayed on the snapshot in order")
    func buffered() {
        let eth1 = Link(state: Fixture.state(3, "eth1"), addresses: [Fixture.v6])
        var store = SessionStore(Session.initiate(Model()).model)
        store.send(.linkRemoved(index: 2), effects: []) { $0.buffered = [.linkRemoved(index: 2)] }
        store.send(.linkChanged(eth1.state), effects: []) { $0.buffered.append(.linkChanged(eth1.state)) }
        store.send(.addressAdded(index: 3, Fixture.v6), effects: []) {
            $0.buffered.append(.addressAdded(index: 3, Fixture.v6))
        }
        // The dump still had eth0, removed while it ran: the replay removes it and adds eth1 with its address.
        store.send(
            .enumerated(generation: 1, snapshot: Snapshot(links: [Self.lo, Self.eth0], devices: [])),
            effects: [
                Fixture.log(.info, .linkAdded, "lo: carrier (127.0.0.1/8)", Fixture.fields(Self.lo)),
                Fixture.log(.info, .linkAdded, "eth1: routable (2001:db8::10/64)", Fixture.fields(eth1)),
                Fixture.log(
                    .notice, .started, "netdevd started: 2 links (1 routable), 0 devices; online",
                    [LogField("NETDEVD_ONLINE_STATE", "online")]),
                .notify([.ready, .status("2 links (1 routable), 0 devices; online")]),
                .noteActivity([.linkAdded(index: 1), .linkAdded(index: 3)]),
            ]
        ) {
            $0.phase = .running
            $0.isEnumerated = true
            $0.buffered = []
            $0.links = [1: Self.lo, 3: eth1]
            $0.publishedEverything()
        }
    }

    @Test("a failed enumeration is retried after a second under a new generation; the old one's answers are ignored")
    func enumerationRetried() {
        let eth1 = Fixture.state(3, "eth1")
        var store = SessionStore(Session.initiate(Model()).model)
        store.send(.linkChanged(eth1), effects: []) { $0.buffered = [.linkChanged(eth1)] }
        store.send(
            .enumerationFailed(generation: 1, reason: "netlink: Operation not permitted"),
            effects: [
                Fixture.log(
                    .error, .enumerationFailed,
                    "Reading links and devices failed, retrying in 1 s: netlink: Operation not permitted"),
                .startTimer(.retryEnumeration, milliseconds: 1_000),
            ])
        // The next dump is newer than what was buffered.
        store.send(.timerFired(.retryEnumeration), effects: [.enumerate(generation: 2, subsystems: Fixture.tracked)]) {
            $0.enumerationGeneration = 2
            $0.buffered = []
        }
        store.sendIgnored(.enumerationFailed(generation: 1, reason: "late"))
        store.sendIgnored(.enumerated(generation: 1, snapshot: Snapshot(links: [Self.eth0], devices: [])))
        // The entry says how long the two readings took, when the adapter measured it.
        let took = ReadTimes(kernelMilliseconds: 310, devicesMilliseconds: 620)
        store.send(
            .enumerated(generation: 2, snapshot: Snapshot(links: [Self.lo], devices: [], readTimes: took)),
            effects: [
                Fixture.log(.info, .linkAdded, "lo: carrier (127.0.0.1/8)", Fixture.fields(Self.lo)),
                Fixture.log(
                    .notice, .started,
                    "netdevd started: 1 link (0 routable), 0 devices; offline; read in 310 ms (rtnetlink), 620 ms (udev)",
                    [
                        LogField("NETDEVD_ONLINE_STATE", "offline"), LogField("NETDEVD_KERNEL_READ_MSEC", "310"),
                        LogField("NETDEVD_DEVICES_READ_MSEC", "620"),
                    ]),
                .notify([.ready, .status("1 link (0 routable), 0 devices; offline")]),
                .noteActivity([.linkAdded(index: 1)]),
            ]
        ) {
            $0.phase = .running
            $0.isEnumerated = true
            $0.links = [1: Self.lo]
            $0.publishedEverything()
        }
        store.sendIgnored(.timerFired(.retryEnumeration))
    }

    @Test("lost events: a resync buffers, a second loss restarts it, and the newest snapshot announces what differs")
    func resync() {
        let eth1 = Link(state: Fixture.state(3, "eth1"))
        var store = SessionStore(Fixture.running([Self.eth0]))
        store.send(
            .monitorOverflowed(source: .udev),
            effects: Fixture.lostEvents(.udev, resyncs: 1, generation: 2)
        ) {
            $0.phase = .resyncing
            $0.counters.resyncs = 1
            $0.enumerationGeneration = 2
            $0.published()
        }
        store.send(.addressAdded(index: 2, Fixture.v6), effects: []) {
            $0.buffered = [.addressAdded(index: 2, Fixture.v6)]
        }
        store.send(
            .monitorOverflowed(source: .netlink),
            effects: Fixture.lostEvents(.netlink, resyncs: 2, generation: 3)
        ) {
            $0.counters.resyncs = 2
            $0.enumerationGeneration = 3
            $0.buffered = []
            $0.published()
        }
        store.sendIgnored(.enumerated(generation: 2, snapshot: Snapshot(links: [], devices: [])))
        store.send(.addressAdded(index: 2, Fixture.v6), effects: []) {
            $0.buffered = [.addressAdded(index: 2, Fixture.v6)]
        }
        // Meanwhile eth0 lost its IPv4 address (the snapshot says so) and eth1 appeared; the buffered IPv6
        // address is replayed on the snapshot, so eth0 stays routable.
        let eth0 = Link(state: Self.eth0.state, addresses: [Fixture.v6])
        let added = Fixture.linkRun(1, .linkAdded, eth1, online: .online)
        store.send(
            .enumerated(
                generation: 3,
                snapshot: Snapshot(
                    links: [Self.lo, Link(state: Self.eth0.state), eth1], devices: [],
                    readTimes: ReadTimes(kernelMilliseconds: 12, devicesMilliseconds: 0))),
            effects: [
                Fixture.log(
                    .info, .addressAdded, "eth0: address 2001:db8::10/64 added",
                    Fixture.fields(eth0) + [LogField("NETDEVD_ADDRESS", "2001:db8::10/64")]),
                Fixture.log(
                    .info, .addressRemoved, "eth0: address 192.0.2.10/24 removed",
                    Fixture.fields(eth0) + [LogField("NETDEVD_ADDRESS", "192.0.2.10/24")]),
                Fixture.log(.info, .linkAdded, "eth1: added, carrier", Fixture.fields(eth1)),
                .runHooks(added),
                Fixture.log(
                    .notice, .resynced,
                    "Re-read the state after lost events: 3 links (1 routable), 0 devices; online; read in 12 ms "
                        + "(rtnetlink), 0 ms (udev)",
                    [
                        LogField("NETDEVD_RESYNCS", "2"), LogField("NETDEVD_KERNEL_READ_MSEC", "12"),
                        LogField("NETDEVD_DEVICES_READ_MSEC", "0"),
                    ]),
                .notify([.status("3 links (1 routable), 0 devices; online")]),
                .noteActivity([.linkAdded(index: 3)]),
            ]
        ) {
            $0.phase = .running
            $0.buffered = []
            $0.links = [1: Self.lo, 2: eth0, 3: eth1]
            $0.startNew(added)
            $0.publishedEverything()
        }
    }

    @Test("SIGHUP reloads; a request meanwhile waits and starts when the first is taken; a rejection keeps the old")
    func reloads() {
        var store = SessionStore(Fixture.running())
        let status = "1 link (0 routable), 0 devices; offline"
        store.send(
            .signalReceived(.hangUp),
            effects: [.notify([.reloading, .status("Reloading configuration (SIGHUP)…")]), .loadConfiguration]
        ) {
            $0.phase = .reloading
            $0.reloadInFlight = true
            $0.reloadCovers = 0
            $0.published()
        }
        store.send(.reloadRequested(by: "uid 1000"), effects: []) {
            $0.reloadRequests = 1
            $0.reloadPending = true
        }
        let warning = Diagnostic(file: "/etc/netdevd/netdevd.conf", line: 3, message: "unknown key 'X'; ignored")
        let configuration = Configuration(debounceMilliseconds: 500)
        store.send(
            .configurationLoaded(configuration, warnings: [warning]),
            effects: [
                Fixture.log(
                    .warning, .configurationWarning, "/etc/netdevd/netdevd.conf:3: unknown key 'X'; ignored",
                    [
                        LogField("NETDEVD_CONFIG_FILE", "/etc/netdevd/netdevd.conf"),
                        LogField("NETDEVD_CONFIG_LINE", "3"),
                    ]
                ),
                Fixture.log(.notice, .reloaded, "Configuration reloaded: \(status)"),
                .notify([.ready, .status(status)]),
                .notify([.reloading, .status("Reloading configuration (a request made during the previous reload)…")]),
                .loadConfiguration,
            ]
        ) {
            $0.configuration = configuration
            $0.lastReload = ReloadOutcome(covers: 0, warnings: [warning.description], errors: [])
            $0.reloadPending = false
            $0.reloadCovers = 1
            $0.published()
        }
        let error = Diagnostic(file: "/etc/netdevd/netdevd.conf.d/50-bad.conf", line: 0, message: "is not UTF-8 text")
        store.send(
            .configurationRejected([error]),
            effects: [
                Fixture.log(
                    .error, .reloadFailed,
                    "Configuration not reloaded, the previous one stays in force: "
                        + "/etc/netdevd/netdevd.conf.d/50-bad.conf: is not UTF-8 text",
                    [
                        LogField("NETDEVD_CONFIG_FILE", "/etc/netdevd/netdevd.conf.d/50-bad.conf"),
                        LogField("NETDEVD_CONFIG_LINE", "0"),
                    ]),
                .notify([.ready, .status(status)]),
            ]
        ) {
            $0.phase = .running
            $0.reloadInFlight = false
            $0.lastReload = ReloadOutcome(covers: 1, warnings: [], errors: [error.description])
            $0.published()
        }
        // An answer with no reload in flight changes nothing.
        store.sendIgnored(.configurationLoaded(Configuration(), warnings: []))
    }

    @Test("a reload asked for while enumerating starts after READY=1; a new minimum state announces going online")
    func reloadAfterStart() {
        let eth0 = Link(state: Fixture.state(2, "eth0"), addresses: [Fixture.v6LinkLocal])
        var store = SessionStore(Session.initiate(Model()).model)
        store.send(.signalReceived(.hangUp), effects: []) { $0.reloadPending = true }
        store.send(
            .enumerated(generation: 1, snapshot: Snapshot(links: [Self.lo, eth0], devices: [])),
            effects: [
                Fixture.log(.info, .linkAdded, "lo: carrier (127.0.0.1/8)", Fixture.fields(Self.lo)),
                Fixture.log(.info, .linkAdded, "eth0: degraded (fe80::1/64)", Fixture.fields(eth0)),
                Fixture.log(
                    .notice, .started, "netdevd started: 2 links (0 routable), 0 devices; offline",
                    [LogField("NETDEVD_ONLINE_STATE", "offline")]),
                .notify([.ready, .status("2 links (0 routable), 0 devices; offline")]),
                .notify([.reloading, .status("Reloading configuration (a request made while enumerating)…")]),
                .loadConfiguration,
                .noteActivity([.linkAdded(index: 1), .linkAdded(index: 2)]),
            ]
        ) {
            $0.phase = .reloading
            $0.isEnumerated = true
            $0.links = [1: Self.lo, 2: eth0]
            $0.reloadPending = false
            $0.reloadInFlight = true
            $0.publishedEverything()
        }
        let degraded = Configuration(minimumOperationalState: .degraded)
        let online = Fixture.onlineRun(1, .online, from: .offline)
        store.send(
            .configurationLoaded(degraded, warnings: []),
            effects: [
                Fixture.log(.notice, .reloaded, "Configuration reloaded: 2 links (0 routable), 0 devices; online"),
                .notify([.ready, .status("2 links (0 routable), 0 devices; online")]),
                Fixture.log(
                    .notice, .onlineStateChanged, "Online state is now online (was offline)",
                    [LogField("NETDEVD_ONLINE_STATE", "online"), LogField("NETDEVD_PREV_ONLINE_STATE", "offline")]),
                .runHooks(online),
            ]
        ) {
            $0.configuration = degraded
            $0.phase = .running
            $0.reloadInFlight = false
            $0.lastReload = ReloadOutcome(covers: 0, warnings: [], errors: [])
            $0.startNew(online)
            $0.published()
        }
    }

    @Test("a reload that tracks a new subsystem re-reads the devices; the new subsystem's devices are added")
    func reloadNewSubsystem() {
        let input = Device(syspath: "/sys/devices/virtual/input/input9", sysname: "input9", subsystem: "input")
        let tracked = Fixture.tracked + ["input"]
        var store = SessionStore(Fixture.running())
        store.send(
            .reloadRequested(by: "uid 0"),
            effects: [.notify([.reloading, .status("Reloading configuration (uid 0)…")]), .loadConfiguration]
        ) {
            $0.phase = .reloading
            $0.reloadRequests = 1
            $0.reloadCovers = 1
            $0.reloadInFlight = true
            $0.published()
        }
        let configuration = Configuration(trackedSubsystems: tracked)
        store.send(
            .configurationLoaded(configuration, warnings: []),
            effects: [
                Fixture.log(.notice, .reloaded, "Configuration reloaded: 1 link (0 routable), 0 devices; offline"),
                .notify([.ready, .status("1 link (0 routable), 0 devices; offline")]),
                .enumerate(generation: 2, subsystems: tracked),
            ]
        ) {
            $0.configuration = configuration
            $0.reloadInFlight = false
            $0.lastReload = ReloadOutcome(covers: 1, warnings: [], errors: [])
            $0.phase = .resyncing
            $0.counters.resyncs = 1
            $0.enumerationGeneration = 2
            $0.published()
        }
        let added = Fixture.deviceRun(1, .deviceAdded, input, online: .offline)
        store.send(
            .enumerated(generation: 2, snapshot: Snapshot(links: [Self.lo], devices: [input])),
            effects: [
                Fixture.log(.info, .deviceAdded, "input device input9 added", Fixture.fields(input)),
                .runHooks(added),
                Fixture.log(
                    .notice, .resynced, "Re-read the state after lost events: 1 link (0 routable), 1 device; offline",
                    [LogField("NETDEVD_RESYNCS", "1")]),
                .notify([.status("1 link (0 routable), 1 device; offline")]),
            ]
        ) {
            $0.phase = .running
            $0.devices = [input.syspath: input]
            $0.startNew(added)
            $0.publishedEverything()
        }
    }
}
