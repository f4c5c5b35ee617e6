import MobiusCore
import NetdevSession

/// Small builders for links, addresses and models, so each test says only what matters to it.
enum Fixture {
    static func state(
        _ index: Int32,
        _ name: String,
        up: Bool = true,
        carrier: Bool = true,
        loopback: Bool = false,
        kernel: KernelOperationalState? = nil
    ) -> LinkState {
        LinkState(
            index: index, name: name, kind: loopback ? nil : "veth", isUp: up, hasLowerUp: up && carrier,
            isLoopback: loopback, kernelState: kernel ?? (up && carrier ? (loopback ? .unknown : .up) : .down)
        )
    }

    static let v4 = LinkAddress(family: .ipv4, address: "192.0.2.10", prefixLength: 24)
    static let v6 = LinkAddress(family: .ipv6, address: "2001:db8::10", prefixLength: 64)
    static let v6LinkLocal = LinkAddress(family: .ipv6, address: "fe80::1", prefixLength: 64, scope: 253)
    static let loopbackAddress = LinkAddress(family: .ipv4, address: "127.0.0.1", prefixLength: 8, scope: 254)

    static var loopback: Link {
        Link(state: state(1, "lo", loopback: true), addresses: [loopbackAddress])
    }

    static func routable(_ index: Int32, _ name: String, addresses: [LinkAddress] = [v4]) -> Link {
        Link(state: state(index, name), addresses: addresses)
    }

    /// A running session with these links (and loopback), devices and configuration, as after a finished start.
    static func running(
        _ links: [Link] = [], devices: [Device] = [], configuration: Configuration = Configuration()
    ) -> Model {
        var model = Model(configuration: configuration)
        model = Session.initiate(model).model
        let next = Session.update(
            model,
            .enumerated(
                generation: model.enumerationGeneration, snapshot: Snapshot(links: [loopback] + links, devices: devices)
            )
        )
        model = next.model!
        return model
    }

    /// The log entries among `effects`.
    static func logs(_ effects: [Effect]) -> [LogEntry] {
        effects.compactMap { if case .log(let entry) = $0 { entry } else { nil } }
    }

    /// The hook runs started among `effects`.
    static func runs(_ effects: [Effect]) -> [HookRun] {
        effects.compactMap { if case .runHooks(let run) = $0 { run } else { nil } }
    }

    static func notifications(_ effects: [Effect]) -> [Notification] {
        effects.flatMap { effect -> [Notification] in
            if case .notify(let fields) = effect { return fields }
            return []
        }
    }
}
