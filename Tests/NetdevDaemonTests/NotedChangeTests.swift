import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

/// Monitors are sent changes built from what the session noted changed (``Model/lastChange``), not from comparing
/// whole models: the two must never differ.
@Suite("Changes built from what the session noted")
struct NotedChangeTests {
    /// A random kernel or udev event about one of 7 links or 4 devices.
    static func randomEvent(using generator: inout SeededGenerator) -> Event {
        let index = Int32.random(in: 2...8, using: &generator)
        let address = LinkAddress(
            family: .ipv4, address: "10.0.\(index).\(Int.random(in: 1...2, using: &generator))", prefixLength: 24)
        let name = ["sda", "sdb", "ttyS0", "ttyS1"].randomElement(using: &generator)!
        let subsystem = name.hasPrefix("tty") ? "tty" : "block"
        let device = Device(
            syspath: "/sys/class/\(subsystem)/\(name)", sysname: name, subsystem: subsystem,
            properties: ["N": String(Int.random(in: 0..<3, using: &generator))])
        switch Int.random(in: 0..<8, using: &generator) {
        case 0, 1:
            return .linkChanged(
                LinkState(
                    index: index, name: Bool.random(using: &generator) ? "eth\(index)" : "wan\(index)", kind: "veth",
                    mtu: 1500, isUp: Bool.random(using: &generator), hasLowerUp: Bool.random(using: &generator),
                    isLoopback: false, kernelState: [.up, .down].randomElement(using: &generator)!))
        case 2: return .linkRemoved(index: index)
        case 3: return .addressAdded(index: index, address)
        case 4: return .addressRemoved(index: index, address)
        case 5: return .deviceChanged(device, action: "change")
        case 6: return .deviceRemoved(syspath: device.syspath)
        default: return .deviceMoved(device, fromSyspath: "/sys/class/\(subsystem)/sda")
        }
    }

    @Test(
        "each change built from the noted links and devices equals the whole models compared, and the monitors' writer writes its bytes, 6,000 events"
    )
    func notedEqualsCompared() {
        var generator = SeededGenerator(seed: 0x4e_6f74)
        var noted = 0
        let requirements = [InterfaceRequirement(pattern: "eth[2-4]"), InterfaceRequirement(pattern: "wan8")]
        // The third run holds 40 more links (down): past 32 links the offline line counts them, not names them.
        for (required, more) in [([], 0), (requirements, 0), ([], 40)] {
            let configuration = Configuration(requiredInterfaces: required)
            let start = Session.initiate(Model(configuration: configuration)).model
            let loopback = LinkState(
                index: 1, name: "lo", isUp: true, hasLowerUp: true, isLoopback: true, kernelState: .unknown)
            let bulk = (0..<more).map { number in
                Link(
                    state: LinkState(
                        index: Int32(100 + number), name: "bulk\(number)", isUp: false, hasLowerUp: false,
                        kernelState: .down))
            }
            let snapshot = Snapshot(links: [Link(state: loopback)] + bulk, devices: [])
            var model = Session.update(start, .enumerated(generation: 1, snapshot: snapshot)).model ?? start
            // What the control service keeps between changes: the last change's missing lines.
            var missing = StateReport(model).onlineMissing
            var writer = ChangeWriter(following: model)
            for step in 0..<2_000 {
                let next = Session.update(model, Self.randomEvent(using: &generator)).model ?? model
                guard next.changeSequence == model.changeSequence + 1 else {
                    #expect(next.links == model.links && next.devices == model.devices, "step \(step)")
                    model = next
                    continue
                }
                var whole = next
                whole.lastChange = .everything
                let change = ChangeReport(from: model, to: next, oldMissing: missing)
                #expect(change == ChangeReport(from: model, to: whole), "step \(step): \(next.lastChange)")
                // The writer carries the listing and the device counts' text from one change to the next.
                var written = ContinuingReplies()
                writer.append(from: model, to: next, to: &written)
                var expected = ContinuingReplies()
                expected.append { ReportJSON.appendChangeParameters(ChangeReport(from: model, to: whole), to: &$0) }
                #expect(
                    written.message == expected.message,
                    "step \(step): \(String(decoding: written.message, as: UTF8.self))")
                noted += next.lastChange.everything ? 0 : 1
                missing = change.onlineMissing
                model = next
            }
        }
        #expect(noted > 1_000, "only \(noted) changes were built from what the session noted")
    }

    @Test("past 32 links, the line saying why the host is offline counts the links instead of naming each")
    func offlineLineCounts() {
        var model = Model()
        for index in Int32(1)...40 {
            model.setLink(
                Link(
                    state: LinkState(
                        index: index, name: "veth\(index)", isUp: true, hasLowerUp: false, kernelState: .down)),
                at: index)
        }
        #expect(
            model.onlineMissing == [
                "no link reaches routable ([Online] MinimumOperationalState=): none of the 40 links other than "
                    + "loopback and ignored ones"
            ])
        model.setLink(nil, at: 40)
        for index in Int32(8)...39 { model.setLink(nil, at: index) }
        #expect(model.onlineMissing?.first?.hasSuffix("veth6 no-carrier, veth7 no-carrier") == true)
    }
}
