import NetdevSession
import Testing

@Suite("Operational and online state")
struct OnlineStateTests {
    @Test(
        "a link's operational state follows networkd's rules",
        arguments: [
            (Link(state: Fixture.state(2, "a", up: false)), OperationalState.off),
            (Link(state: Fixture.state(2, "a", carrier: false)), .noCarrier),
            (Link(state: Fixture.state(2, "a", kernel: .dormant)), .dormant),
            (Link(state: Fixture.state(2, "a")), .carrier),
            (Link(state: Fixture.state(2, "a"), addresses: [Fixture.v6LinkLocal]), .degraded),
            (Link(state: Fixture.state(2, "a"), addresses: [Fixture.v6LinkLocal, Fixture.v4]), .routable),
            (
                Link(
                    state: Fixture.state(2, "a"),
                    addresses: [LinkAddress(family: .ipv6, address: "2001:db8::9", prefixLength: 64, isTentative: true)]
                ),
                .carrier
            ),
            (Fixture.loopback, .carrier),
            (Link(state: Fixture.state(2, "tun0", kernel: .unknown)), .carrier),
        ]
    )
    func operationalState(link: Link, expected: OperationalState) {
        #expect(link.operationalState == expected)
    }

    @Test("what the online state waits for is named: each requirement not met, or the links short of the minimum")
    func missing() {
        let eth0 = Link(state: Fixture.state(2, "eth0"), addresses: [Fixture.v6LinkLocal])
        let wlan0 = Link(state: Fixture.state(3, "wlan0", up: false))
        let required = Configuration(
            requiredInterfaces: [
                InterfaceRequirement(pattern: "eth0"), InterfaceRequirement(pattern: "wl*", minimumState: .carrier),
                InterfaceRequirement(pattern: "usb0"),
            ], requiredFamily: .ipv4)
        #expect(
            OnlineEvaluation.missing(of: [Fixture.loopback, eth0, wlan0], configuration: required) == [
                "eth0: degraded, needs routable (ipv4)", "wlan0: off, needs carrier",
                "usb0: no such link, needs routable (ipv4)",
            ])
        #expect(
            OnlineEvaluation.missing(of: [Fixture.loopback, eth0, wlan0], configuration: Configuration()) == [
                "no link reaches routable ([Online] MinimumOperationalState=): eth0 degraded, wlan0 off"
            ])
        let routable = Link(state: Fixture.state(2, "eth0"), addresses: [Fixture.v4])
        #expect(OnlineEvaluation.missing(of: [routable], configuration: Configuration()).isEmpty)
    }

    @Test("a requirement with more links short of it than a line names counts them, and names each once fewer are")
    func missingAtScale() {
        let configuration = Configuration(requiredInterfaces: [
            InterfaceRequirement(parsing: "veth*")!, InterfaceRequirement(parsing: "eth0:degraded")!,
        ])
        let veths = (0..<40).map { Link(state: Fixture.state(Int32(10 + $0), "veth\($0)")) }
        var model = Fixture.running(veths, configuration: configuration)
        #expect(
            model.onlineMissing == [
                "veth*: 40 of the 40 matching links, needs routable", "eth0: no such link, needs degraded",
            ])
        for position in 0..<8 {
            model.setLink(Fixture.routable(Int32(10 + position), "veth\(position)"), at: Int32(10 + position))
        }
        let named = (8..<40).map { "veth\($0): carrier, needs routable" }
        #expect(model.onlineMissing == named + ["eth0: no such link, needs degraded"])
        model.setLink(Link(state: Fixture.state(2, "eth0")), at: 2)
        model.setLink(Fixture.routable(20, "veth10"), at: 20)
        model.setLink(nil, at: 30)
        #expect(
            model.onlineMissing
                == named.filter { !$0.hasPrefix("veth10:") && !$0.hasPrefix("veth20:") } + [
                    "eth0: carrier, needs degraded"
                ])
        #expect(model.onlineState == .offline)
        #expect(
            model.onlineMissing == OnlineEvaluation.missing(of: model.links.values, configuration: configuration))
        for position in 0..<40 where model.links[Int32(10 + position)] != nil {
            model.setLink(Fixture.routable(Int32(10 + position), "veth\(position)"), at: Int32(10 + position))
        }
        #expect(model.onlineMissing == ["eth0: carrier, needs degraded"])
        #expect(model.onlineMissing == OnlineEvaluation.missing(of: model.links.values, configuration: configuration))
    }

    @Test("without requirements: online when any non-loopback, non-ignored link is routable")
    func defaults() {
        #expect(Fixture.running().onlineState == .offline)
        #expect(Fixture.running([Fixture.routable(2, "eth0")]).onlineState == .online)
        #expect(
            Fixture.running([Link(state: Fixture.state(2, "eth0"), addresses: [Fixture.v6LinkLocal])]).onlineState
                == .offline)
    }

    @Test("required interfaces with globs and per-interface states: online, partial, offline")
    func requiredGlobs() {
        let configuration = Configuration(requiredInterfaces: [
            InterfaceRequirement(parsing: "eth*")!, InterfaceRequirement(parsing: "wl?0:degraded")!,
        ])
        let eth = Fixture.routable(2, "eth0")
        let wifi = Link(state: Fixture.state(3, "wlp0"), addresses: [Fixture.v6LinkLocal])
        #expect(Fixture.running([eth, wifi], configuration: configuration).onlineState == .online)
        #expect(Fixture.running([eth], configuration: configuration).onlineState == .partial)
        #expect(
            Fixture.running([Link(state: Fixture.state(2, "eth0"))], configuration: configuration).onlineState
                == .offline)
        let second = Link(state: Fixture.state(4, "eth1"))
        #expect(Fixture.running([eth, second, wifi], configuration: configuration).onlineState == .partial)
        #expect(InterfaceRequirement(parsing: "eth0:fast") == nil)
    }

    @Test("an IPv6-only host is online unless IPv4 is required")
    func ipv6Only() {
        let link = Fixture.routable(2, "eth0", addresses: [Fixture.v6])
        #expect(Fixture.running([link]).onlineState == .online)
        #expect(Fixture.running([link], configuration: Configuration(requiredFamily: .ipv6)).onlineState == .online)
        #expect(Fixture.running([link], configuration: Configuration(requiredFamily: .ipv4)).onlineState == .offline)
        #expect(Fixture.running([link], configuration: Configuration(requiredFamily: .both)).onlineState == .offline)
    }

    @Test("globs: *, ?, classes, ranges and negation")
    func globs() {
        #expect(Glob.matches("eth*", "eth0") && Glob.matches("eth*", "eth") && !Glob.matches("eth*", "veth0"))
        #expect(Glob.matches("wl?0", "wlp0") && !Glob.matches("wl?0", "wl0"))
        #expect(Glob.matches("en[ops]*", "enp3s0") && !Glob.matches("en[ops]*", "enx1"))
        #expect(Glob.matches("eth[0-3]", "eth2") && !Glob.matches("eth[0-3]", "eth7"))
        #expect(Glob.matches("eth[!0]", "eth1") && !Glob.matches("eth[!0]", "eth0"))
        #expect(Glob.matches("*", "") && !Glob.matches("", "a") && Glob.matches("a*b*c", "aXbYc"))
    }
}
