// A recorded burst replayed through a MobiusLoop running the session, for an instruction count per kernel message
// under callgrind (repeatable on a noisy machine, unlike seconds):
//
//   make benchmark-replay
//
// The recording is `netdevd --record FILE` of the load harness's 500-pair create and delete burst (every event
// the loop processed, hook results included). Decoding happens before the measured function; callgrind counts
// only `netdevd_replay_measured` (--toggle-collect), which starts a loop from a new model, dispatches every event,
// reads the last model and disposes the loop. Effects go to a handler that drops them, and an observer receives
// every model, as the control plane's view does. The model makes journal entries up to priority 6, as the daemon
// does by default.

import Foundation
import MobiusCore
import NetdevSession

/// Counts what an effect handler and an observer would see, so the work cannot be optimised away.
final class Tally: @unchecked Sendable {
    // @unchecked Sendable: the loop is driven from this one thread only (dispatchEvent runs update in place).
    var effects = 0
    var models = 0
}

@_silgen_name("netdevd_replay_measured")
@inline(never)
func replay(_ events: [Event], tally: Tally) -> Model {
    let handler = AnyConnectable<Effect, Event> { _ in
        Connection(acceptClosure: { _ in tally.effects += 1 }, disposeClosure: {})
    }
    let loop = Mobius.loop(update: Session.loopUpdate, effectHandler: handler)
        .start(from: Session.initiate(Model(maximumLogPriority: .info)).model)
    let observer = loop.addObserver { _ in tally.models += 1 }
    for event in events {
        loop.dispatchEvent(event)
    }
    let last = loop.latestModel
    observer.dispose()
    loop.dispose()
    return last
}

/// Events from the rtnetlink and udev monitors: what "per kernel message" divides by.
func isKernelMessage(_ event: Event) -> Bool {
    switch event {
    case .linkChanged, .linkRemoved, .addressAdded, .addressRemoved, .defaultRouteAdded, .defaultRouteRemoved,
        .deviceChanged, .deviceRemoved:
        true
    default:
        false
    }
}

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: ReplayLoop RECORDING.jsonl\n".utf8))
    exit(2)
}
let text: String
do {
    text = try String(contentsOfFile: CommandLine.arguments[1], encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("ReplayLoop: cannot read \(CommandLine.arguments[1]): \(error)\n".utf8))
    exit(1)
}
let decoder = JSONDecoder()
// A recording's first line says the configuration (`{"start":...}`); the benchmark runs with the defaults.
let events = try text.split(separator: "\n").filter { !$0.hasPrefix("{\"start\":") }.map { line in
    try decoder.decode(Event.self, from: Data(line.utf8))
}
let tally = Tally()
let started = DispatchTime.now().uptimeNanoseconds
let last = replay(events, tally: tally)
let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
let kernelMessages = events.filter(isKernelMessage).count
print("events \(events.count), kernel messages \(kernelMessages), models \(tally.models), effects \(tally.effects)")
print("final model: \(last.links.count) links, \(last.devices.count) devices, phase \(last.phase.rawValue)")
print(String(format: "wall %.1f ms (%.2f µs per kernel message)", elapsed, elapsed * 1000 / Double(kernelMessages)))
