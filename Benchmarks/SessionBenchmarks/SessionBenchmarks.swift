// NetdevSession.update on a realistic mix of events, 100,000 per measured iteration:
//
//   make benchmark
//
// A running session with 50 links and 200 devices receives carrier flaps, address and default-route changes,
// device changes, watchdog ticks and hook results, with hooks scheduled as they would be. Wall clock is per
// 100,000 events (100 / ms = M events/s); mallocs per 100,000 events.

import Benchmark
import NetdevSession

let eventsPerIteration = 100_000

func linkState(_ index: Int32, carrier: Bool) -> LinkState {
    LinkState(
        index: index, name: "eth\(index)", kind: "veth", isUp: true, hasLowerUp: carrier,
        kernelState: carrier ? .up : .down)
}

/// A running session with 50 links (half routable) and 200 block devices.
func runningModel() -> Model {
    var model = Session.initiate(Model()).model
    let links = (2...51).map { index in
        Link(
            state: linkState(Int32(index), carrier: true),
            addresses: index.isMultiple(of: 2)
                ? [LinkAddress(family: .ipv4, address: "192.0.2.\(index)", prefixLength: 24)] : [])
    }
    let devices = (0..<200).map { index in
        Device(syspath: "/sys/devices/virtual/block/loop\(index)", sysname: "loop\(index)", subsystem: "block")
    }
    model = Session.update(model, .enumerated(generation: 1, snapshot: Snapshot(links: links, devices: devices))).model!
    return model
}

/// 1,000 events in a realistic proportion, cycled.
func eventMix() -> [Event] {
    (0..<1_000).map { step -> Event in
        let index = Int32(2 + step % 50)
        switch step % 20 {
        case 0...7:
            return .linkChanged(linkState(index, carrier: step % 3 != 0))
        case 8...11:
            let address = LinkAddress(family: .ipv6, address: "2001:db8::\(step % 50)", prefixLength: 64)
            return step % 2 == 0 ? .addressAdded(index: index, address) : .addressRemoved(index: index, address)
        case 12, 13:
            let route = DefaultRoute(family: .ipv4, gateway: "192.0.2.1")
            return step % 2 == 0 ? .defaultRouteAdded(index: index, route) : .defaultRouteRemoved(index: index, route)
        case 14...16:
            let device = Device(
                syspath: "/sys/devices/virtual/block/loop\(step % 200)", sysname: "loop\(step % 200)",
                subsystem: "block",
                properties: ["SEQ": String(step)])
            return .deviceChanged(device, action: "change")
        case 17:
            return .watchdogTick
        default:
            return .hookRunFinished(HookRunResult(runID: step, hooks: []))
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "NetdevSession.update, realistic mix",
        configuration: .init(
            metrics: [.throughput, .wallClock, .mallocCountTotal, .peakMemoryResident],
            timeUnits: .milliseconds,
            warmupIterations: 1,
            scalingFactor: .one,
            maxDuration: .seconds(30),
            maxIterations: 10
        )
    ) { benchmark in
        let events = eventMix()
        var model = runningModel()
        benchmark.startMeasurement()
        for step in 0..<eventsPerIteration {
            let next = Session.update(model, events[step % events.count])
            if let updated = next.model {
                model = updated
            }
            blackHole(next.effects.count)
        }
        benchmark.stopMeasurement()
        blackHole(model.changeSequence)
    }
}
