import JSONCoding
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing

/// `ListLinks` replies are made from the last reply's text and the links changed since: the text must always be what
/// encoding every link gives, however changes, missed models and late replies interleave.
@Suite("The ListLinks reply, kept across changes")
struct LinkListTextTests {
    static func wholeText(_ model: Model) throws -> [UInt8] {
        try JSONTextEncoder().encode(["links": model.sortedLinks.map(LinkReport.init)])
    }

    /// A model with the 7 links and 4 devices the random events touch, and 50 links they never touch.
    static func start() -> Model {
        let model = Session.initiate(Model()).model
        let quiet = (100...149).map { index in
            Link(
                state: LinkState(
                    index: Int32(index), name: "quiet\(index)", kind: "veth", mtu: 1500, isUp: true,
                    hasLowerUp: true, isLoopback: false, kernelState: .up),
                addresses: [LinkAddress(family: .ipv4, address: "10.1.0.\(index)", prefixLength: 24)])
        }
        let snapshot = Snapshot(links: quiet, devices: [])
        return Session.update(model, .enumerated(generation: 1, snapshot: snapshot)).model ?? model
    }

    @Test("every reply equals the whole encoding, and the links that did not change are copied, 3,000 events")
    func equalsWholeEncoding() throws {
        var generator = SeededGenerator(seed: 0x4c_69_73_74)
        var model = Self.start()
        var list = LinkListText()
        list.note(model)
        var replies = 0
        var copied = 0
        var late: LinkListText.Made?
        for step in 0..<3_000 {
            model = Session.update(model, NotedChangeTests.randomEvent(using: &generator)).model ?? model
            if Int.random(in: 0..<50, using: &generator) == 0 {
                // A change not noted link by link (a resync, a reload), or noted for more links than the kept text
                // is worth following: a quiet link is renamed, and its kept text must not be used again.
                let index = Int32.random(in: 100...149, using: &generator)
                if var link = model.links[index] {
                    link.state.name = "renamed\(step)"
                    model.setLink(link, at: index)
                }
                model.changeSequence += 1
                model.lastChange = Bool.random(using: &generator) ? .everything : StateChange(links: Array(100...149))
            }
            switch Int.random(in: 0..<100, using: &generator) {
            case 0:
                // A model the service never saw: the kept text must not be used for the next reply.
                continue
            case 1..<30:
                list.note(model)
                if let text = list.current(for: model) {
                    #expect(text == (try Self.wholeText(model)), "step \(step)")
                    continue
                }
                let made = list.make(for: model)
                #expect(made.text == (try Self.wholeText(model)), "step \(step)")
                copied += made.copied
                replies += 1
                // Sometimes kept only after more models were noted, as a reply made outside the lock may be.
                if late == nil && Bool.random(using: &generator) {
                    late = made
                } else {
                    list.keep(made)
                }
            default:
                list.note(model)
                if let made = late, Bool.random(using: &generator) {
                    list.keep(made)
                    late = nil
                }
            }
        }
        #expect(replies > 300)
        // The 50 quiet links are copied in nearly every reply.
        #expect(copied > replies * 40, "\(copied) links copied over \(replies) replies")
    }

    @Test("after a change not noted link by link, a reply made while more changes came is kept and used")
    func keptAgainAfterWholeChange() throws {
        var list = LinkListText()
        var model = Self.start()
        list.note(model)
        list.keep(list.make(for: model))
        // A resync: what changed is not known link by link.
        model.changeSequence += 1
        model.lastChange = .everything
        list.note(model)
        let quiet = LinkState(
            index: 100, name: "quiet100", kind: "veth", mtu: 1500, isUp: false, hasLowerUp: false, isLoopback: false,
            kernelState: .down)
        model = Session.update(model, .linkChanged(quiet)).model ?? model
        list.note(model)
        let made = list.make(for: model)
        #expect(made.copied == 0)
        // Links keep changing while the reply is made outside the lock; it is kept all the same.
        var renamed = quiet
        renamed.name = "quiet100b"
        model = Session.update(model, .linkChanged(renamed)).model ?? model
        list.note(model)
        list.keep(made)
        let next = list.make(for: model)
        #expect(next.text == (try Self.wholeText(model)))
        #expect(next.copied == 49, "the 49 links that did not change are copied")
    }
}
