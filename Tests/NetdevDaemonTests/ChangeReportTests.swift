import KernelTestSupport
import NetdevDaemon
import NetdevSession
import Testing

@Suite("Monitor changes")
struct ChangeReportTests {
    /// A random model: some of 12 links (random state, addresses and routes) and some of 20 devices.
    static func randomModel(sequence: Int, using generator: inout SeededGenerator) -> Model {
        var model = Model()
        model.changeSequence = sequence
        model.phase = [.running, .resyncing, .reloading].randomElement(using: &generator)!
        for index in Int32(1)...12 where Bool.random(using: &generator) {
            let state = LinkState(
                index: index,
                name: Bool.random(using: &generator) ? "veth\(index)" : "renamed\(index)",
                kind: index == 1 ? nil : "veth",
                mtu: [1500, 9000].randomElement(using: &generator),
                isUp: Bool.random(using: &generator),
                hasLowerUp: Bool.random(using: &generator),
                isLoopback: index == 1,
                kernelState: [.up, .down, .unknown].randomElement(using: &generator)!)
            let addresses = (0..<Int.random(in: 0...2, using: &generator)).map {
                LinkAddress(family: .ipv4, address: "10.0.\(index).\($0 + 1)", prefixLength: 24)
            }
            let routes =
                Bool.random(using: &generator) ? [DefaultRoute(family: .ipv4, gateway: "10.0.\(index).254")] : []
            model.links[index] = Link(state: state, addresses: addresses, defaultRoutes: routes)
        }
        for number in 0..<20 where Bool.random(using: &generator) {
            let path = "/sys/devices/virtual/\(number)"
            model.devices[path] = Device(
                syspath: path, sysname: "d\(number)", subsystem: ["net", "tty", "block"][number % 3])
        }
        model.counters.resyncs = Int.random(in: 0...3, using: &generator)
        return model
    }

    @Test("applying each change to the first state gives every later state exactly, over 500 random models")
    func changesRebuildTheState() {
        var generator = SeededGenerator(seed: 0x6e65_7464)
        var model = Self.randomModel(sequence: 1, using: &generator)
        var held = StateReport(model)
        var linksSent = 0
        for sequence in 2...501 {
            let next = Self.randomModel(sequence: sequence, using: &generator)
            let change = ChangeReport(from: model, to: next)
            #expect(change.sequence == held.sequence + 1)
            linksSent += change.links.count
            held = held.applying(change)
            #expect(held == StateReport(next), "after change \(sequence)")
            model = next
        }
        // Random models change most links each time; the point is that unchanged links are not resent.
        #expect(linksSent < 500 * 12)
    }

    @Test("a change that touches one link carries that link only")
    func oneLinkOneEntry() {
        var generator = SeededGenerator(seed: 7)
        let before = Self.randomModel(sequence: 1, using: &generator)
        var after = before
        after.changeSequence = 2
        let index = before.links.keys.sorted().last!
        after.links[index]?.addresses.append(LinkAddress(family: .ipv6, address: "fd00::1", prefixLength: 64))
        after.links[99] = nil
        let change = ChangeReport(from: before, to: after)
        #expect(change.links.map(\.index) == [Int(index)])
        #expect(change.removedLinks == [])

        var gone = after
        gone.changeSequence = 3
        gone.links[index] = nil
        #expect(ChangeReport(from: after, to: gone).removedLinks == [Int(index)])
        #expect(ChangeReport(from: after, to: gone).links == [])
    }
}
