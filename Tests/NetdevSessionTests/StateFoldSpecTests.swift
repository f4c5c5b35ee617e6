import MobiusCore
import MobiusTest
import NetdevSession
import Testing

/// How link, address, route and device events change the model and what they announce, every step checked whole.
@Suite("State fold, step by step")
struct StateFoldSpecTests {
    static let eth0 = Link(state: Fixture.state(2, "eth0"))

    @Test("a link comes, changes state, is renamed and goes; a repeated event changes nothing and says nothing")
    func linkLife() {
        var store = SessionStore(Fixture.running([Self.eth0]))
        let eth1 = Link(state: Fixture.state(3, "eth1"))
        let added = Fixture.linkRun(1, .linkAdded, eth1, online: .offline)
        store.send(
            .linkChanged(eth1.state),
            effects: [
                Fixture.log(.info, .linkAdded, "eth1: added, carrier", Fixture.fields(eth1)),
                .runHooks(added),
                .noteActivity([.linkAdded(index: 3)]),
            ]
        ) {
            $0.links[3] = eth1
            $0.startNew(added)
            $0.published(links: [3])
        }
        store.send(
            Fixture.succeeded(added),
            effects: [
                Fixture.log(
                    .debug, .hookRunFinished, "Hooks for link-added eth1 ran: 0 hooks in 0 ms", Fixture.fields(added))
            ]
        ) { $0.hooks.running = [:] }
        let off = Link(state: Fixture.state(3, "eth1", up: false))
        let state = Fixture.linkRun(2, .linkState, off, from: .carrier, online: .offline)
        store.send(
            .linkChanged(off.state),
            effects: [
                Fixture.log(
                    .info, .linkStateChanged, "eth1: carrier → off",
                    Fixture.fields(off) + [LogField("NETDEVD_PREV_OPER_STATE", "carrier")]),
                .runHooks(state),
                .noteActivity([.linkStateChanged(index: 3)]),
            ]
        ) {
            $0.links[3] = off
            $0.startNew(state)
            $0.published(links: [3])
        }
        // A new name, the same state: the journal says so; hooks hear of states only.
        let renamed = Link(state: Fixture.state(3, "wan0", up: false))
        store.send(
            .linkChanged(renamed.state),
            effects: [
                Fixture.log(
                    .info, .linkRenamed, "eth1: renamed to wan0",
                    Fixture.fields(renamed) + [LogField("NETDEVD_PREV_IFNAME", "eth1")])
            ]
        ) {
            $0.links[3] = renamed
            $0.published(links: [3])
        }
        store.sendWithoutModel(.linkChanged(renamed.state))
        // Its link-state run still runs: the removal waits for it.
        let removed = Fixture.linkRun(3, .linkRemoved, renamed, from: .off, online: .offline)
        store.send(
            .linkRemoved(index: 3),
            effects: [
                Fixture.log(.info, .linkRemoved, "wan0: removed", Fixture.fields(renamed)),
                .noteActivity([.linkRemoved(index: 3)]),
            ]
        ) {
            $0.links[3] = nil
            $0.queueNew(removed)
            $0.published(links: [3])
        }
        store.sendWithoutModel(.linkRemoved(index: 3))
    }

    @Test("addresses and default routes: each change is one entry; a routable address makes the host online")
    func addressesAndRoutes() {
        var store = SessionStore(Fixture.running([Self.eth0]))
        let routable = Link(state: Self.eth0.state, addresses: [Fixture.v4])
        let address = [LogField("NETDEVD_ADDRESS", "192.0.2.10/24")]
        let up = Fixture.linkRun(1, .linkState, routable, from: .carrier, online: .online)
        let online = Fixture.onlineRun(2, .online, from: .offline)
        store.send(
            .addressAdded(index: 2, Fixture.v4),
            effects: [
                Fixture.log(
                    .info, .addressAdded, "eth0: address 192.0.2.10/24 added", Fixture.fields(routable) + address),
                Fixture.log(
                    .info, .linkStateChanged, "eth0: carrier → routable",
                    Fixture.fields(routable) + [LogField("NETDEVD_PREV_OPER_STATE", "carrier")]),
                .runHooks(up),
                Fixture.log(
                    .notice, .onlineStateChanged, "Online state is now online (was offline)",
                    [LogField("NETDEVD_ONLINE_STATE", "online"), LogField("NETDEVD_PREV_ONLINE_STATE", "offline")]),
                .runHooks(online),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = routable
            $0.startNew(up)
            $0.startNew(online)
            $0.published(links: [2])
        }
        store.sendWithoutModel(.addressAdded(index: 2, Fixture.v4))
        let route = DefaultRoute(family: .ipv4, gateway: "192.0.2.1")
        let routed = Link(state: Self.eth0.state, addresses: [Fixture.v4], defaultRoutes: [route])
        let gateway = [LogField("NETDEVD_GATEWAY", "192.0.2.1")]
        store.send(
            .defaultRouteAdded(index: 2, route),
            effects: [
                Fixture.log(
                    .info, .routeAdded, "eth0: default route via 192.0.2.1 added", Fixture.fields(routed) + gateway)
            ]
        ) {
            $0.links[2] = routed
            $0.published(links: [2])
        }
        store.send(
            .defaultRouteRemoved(index: 2, route),
            effects: [
                Fixture.log(
                    .info, .routeRemoved, "eth0: default route via 192.0.2.1 removed",
                    Fixture.fields(routable) + gateway)
            ]
        ) {
            $0.links[2] = routable
            $0.published(links: [2])
        }
        store.sendWithoutModel(.defaultRouteRemoved(index: 2, route))
        // Both hook runs still run: the new ones wait behind them.
        let down = Fixture.linkRun(3, .linkState, Self.eth0, from: .routable, online: .offline)
        let offline = Fixture.onlineRun(4, .offline, from: .online)
        store.send(
            .addressRemoved(index: 2, Fixture.v4),
            effects: [
                Fixture.log(
                    .info, .addressRemoved, "eth0: address 192.0.2.10/24 removed", Fixture.fields(Self.eth0) + address),
                Fixture.log(
                    .info, .linkStateChanged, "eth0: routable → carrier",
                    Fixture.fields(Self.eth0) + [LogField("NETDEVD_PREV_OPER_STATE", "routable")]),
                Fixture.log(
                    .notice, .onlineStateChanged, "Online state is now offline (was online)",
                    [LogField("NETDEVD_ONLINE_STATE", "offline"), LogField("NETDEVD_PREV_ONLINE_STATE", "online")]),
                .noteActivity([.linkStateChanged(index: 2)]),
            ]
        ) {
            $0.links[2] = Self.eth0
            $0.queueNew(down)
            $0.queueNew(offline)
            $0.published(links: [2])
        }
        store.sendWithoutModel(.addressAdded(index: 9, Fixture.v4))
    }

    @Test("a tracked device is added, changed, moved and removed, with its hooks; an untracked one is not kept")
    func deviceLife() {
        var store = SessionStore(Fixture.running())
        let sda = Device(syspath: "/sys/block/sda", sysname: "sda", subsystem: "block")
        let added = Fixture.deviceRun(1, .deviceAdded, sda, online: .offline)
        store.send(
            .deviceChanged(sda, action: "add"),
            effects: [
                Fixture.log(.info, .deviceAdded, "block device sda added", Fixture.fields(sda)), .runHooks(added),
            ]
        ) {
            $0.devices[sda.syspath] = sda
            $0.startNew(added)
            $0.published(devices: [sda.syspath])
        }
        let input = Device(syspath: "/sys/devices/virtual/input/input9", sysname: "input9", subsystem: "input")
        store.sendWithoutModel(.deviceChanged(input, action: "add"))
        store.send(
            Fixture.succeeded(added),
            effects: [
                Fixture.log(
                    .debug, .hookRunFinished, "Hooks for device-added /sys/block/sda ran: 0 hooks in 0 ms",
                    Fixture.fields(added))
            ]
        ) { $0.hooks.running = [:] }
        var bound = sda
        bound.driver = "sd"
        let changed = Fixture.deviceRun(2, .deviceChanged, bound, online: .offline)
        store.send(
            .deviceChanged(bound, action: "bind"),
            effects: [
                Fixture.log(.info, .deviceChanged, "block device sda: bind", Fixture.fields(bound)), .runHooks(changed),
            ]
        ) {
            $0.devices[sda.syspath] = bound
            $0.startNew(changed)
            $0.published(devices: [bound.syspath])
        }
        store.send(
            Fixture.succeeded(changed),
            effects: [
                Fixture.log(
                    .debug, .hookRunFinished, "Hooks for device-changed /sys/block/sda ran: 0 hooks in 0 ms",
                    Fixture.fields(changed))
            ]
        ) { $0.hooks.running = [:] }
        let sdb = Device(syspath: "/sys/block/sdb", sysname: "sdb", subsystem: "block", driver: "sd")
        let moved = Fixture.deviceRun(3, .deviceMoved, sdb, from: sda.syspath, online: .offline)
        store.send(
            .deviceMoved(sdb, fromSyspath: sda.syspath),
            effects: [
                Fixture.log(
                    .info, .deviceMoved, "block device sda renamed to sdb",
                    Fixture.fields(sdb) + [LogField("NETDEVD_PREV_DEVPATH", sda.syspath)]),
                .runHooks(moved),
            ]
        ) {
            $0.devices = [sdb.syspath: sdb]
            $0.startNew(moved)
            $0.published(devices: [sda.syspath, sdb.syspath])
        }
        let removed = Fixture.deviceRun(4, .deviceRemoved, sdb, online: .offline)
        store.send(
            .deviceRemoved(syspath: sdb.syspath),
            effects: [Fixture.log(.info, .deviceRemoved, "block device sdb removed", Fixture.fields(sdb))]
        ) {
            $0.devices = [:]
            $0.queueNew(removed)
            $0.published(devices: [sdb.syspath])
        }
        store.sendWithoutModel(.deviceRemoved(syspath: sdb.syspath))
    }

    @Test("an ignored link is logged at debug and counted, runs no hooks and never makes the host online")
    func ignoredLink() {
        var store = SessionStore(Fixture.running(configuration: Configuration(ignoredInterfaces: ["veth*"])))
        let veth = Link(state: Fixture.state(5, "veth5"))
        store.send(
            .linkChanged(veth.state),
            effects: [
                Fixture.log(.debug, .linkAdded, "veth5: added, carrier", Fixture.fields(veth)),
                .noteActivity([.linkAdded(index: 5)]),
            ]
        ) {
            $0.links[5] = veth
            $0.published(links: [5])
        }
        let routable = Link(state: veth.state, addresses: [Fixture.v4])
        store.send(
            .addressAdded(index: 5, Fixture.v4),
            effects: [
                Fixture.log(
                    .debug, .addressAdded, "veth5: address 192.0.2.10/24 added",
                    Fixture.fields(routable) + [LogField("NETDEVD_ADDRESS", "192.0.2.10/24")]),
                Fixture.log(
                    .debug, .linkStateChanged, "veth5: carrier → routable",
                    Fixture.fields(routable) + [LogField("NETDEVD_PREV_OPER_STATE", "carrier")]),
                .noteActivity([.linkStateChanged(index: 5)]),
            ]
        ) {
            $0.links[5] = routable
            $0.published(links: [5])
        }
        store.send(
            .linkRemoved(index: 5),
            effects: [
                Fixture.log(.debug, .linkRemoved, "veth5: removed", Fixture.fields(routable)),
                .noteActivity([.linkRemoved(index: 5)]),
            ]
        ) {
            $0.links[5] = nil
            $0.published(links: [5])
        }
    }
}
