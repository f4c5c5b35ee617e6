// What a host's size costs netdevd's code, without a kernel: a model of N links (each with an address and a net
// device carrying the udev properties a veth has) and a host's other devices (10 block, 68 tty) built from a
// snapshot, then, at N = 1,000 and 20,000:
//
//   - the memory the model holds per link (the resident set after the model is built less before);
//   - the session's CPU per event (a state change of a link, alternating, through `Session.update`), and the same
//     with hooks debounced and networkd-dispatcher's scripts configured while networkd runs (every link's states
//     then kept for its scripts); and a link change with its hook run started and ended while one link's slow run
//     holds that link's next run;
//   - the same while a resync reads the state: 10,000 address events held for the snapshot (the limit);
//   - an address added to a link that holds 4,000 (a load balancer's addresses on one link);
//   - a monitor's change report per event, built from what the session noted (`Model.lastChange`) and, for
//     comparison, from the two whole models, each written into its reply's frame as the monitors' queue writes it;
//     and with `RequiredInterfaces=` matching every link while the host is not online (its missing lines in each);
//   - a `ListLinks` reply (the whole table encoded), and again after one link changed (from the text kept with
//     each link's place in it);
//   - `Monitor`'s first reply (every link and every device with its udev properties);
//   - the same reply decoded whole (as `netdevctl status` decodes its links), decoded and laid out as `netdevctl
//     links` prints its table (only the four fields it shows), and printed as `netdevctl links --json=short`
//     prints it (parsed and written again);
//   - a metrics render (the text `GetMetrics` and the textfile write make), a new exporter's first (every link new
//     to it), and `GetMetrics`' reply (that text as a JSON string);
//   - the metrics text handed on in 64 KiB pieces as it is made, as the textfile is written (to /dev/null here);
//
//   make benchmark-large-host
//   .build/release/LargeHost --once 20000    (one size, one pass of each: for callgrind)
//   .build/release/LargeHost --daemon-malloc  (glibc set up as netdevd sets it: buffers of 256 KiB and more mapped
//                                              for each use, so a whole 12 MB text costs its page faults each time)
//
// Each figure is the median of 5 timed passes (thread CPU time), so it can be compared between the two sizes on a
// noisy machine: a flat cost per event is the same at both.

import CLinux
import Foundation
import JSONCoding
import NetdevDaemon
import NetdevSession
import NetdevWire
import NetdevctlCommands
import Varlink

func cpuNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

let arguments = CommandLine.arguments.dropFirst()
let passCount = arguments.contains("--once") ? 1 : 5
let sizes = arguments.compactMap { Int($0) }
if arguments.contains("--daemon-malloc") {
    mallopt(M_ARENA_MAX, 1)
    mallopt(M_MMAP_THRESHOLD, 256 * 1024)
}
let devNull = open("/dev/null", O_WRONLY)

/// The median of 5 passes of `body` (or the one pass of `--once`), in microseconds of this thread's CPU, divided by
/// `per`.
func measure(per: Int = 1, _ body: () -> Void) -> Double {
    var passes: [Double] = []
    for _ in 0..<passCount {
        let start = cpuNanoseconds()
        body()
        passes.append(Double(cpuNanoseconds() - start) / 1_000 / Double(per))
    }
    return passes.sorted()[passes.count / 2]
}

/// The resident set now, in bytes (/proc/self/statm).
func residentBytes() -> Int {
    let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
    return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func linkState(_ index: Int32, up: Bool) -> LinkState {
    LinkState(
        index: index, name: "nb\(index)a", kind: "veth", macAddress: "aa:bb:cc:dd:\(index % 100):\(index % 7)",
        mtu: 1500, isUp: up, hasLowerUp: up, kernelState: up ? .up : .down)
}

/// The properties udev gives a veth's net device.
func netDevice(_ index: Int32) -> Device {
    let name = "nb\(index)a"
    return Device(
        syspath: "/sys/devices/virtual/net/\(name)", sysname: name, subsystem: "net", driver: nil,
        properties: [
            "DEVPATH": "/devices/virtual/net/\(name)", "SUBSYSTEM": "net", "INTERFACE": name, "IFINDEX": "\(index)",
            "USEC_INITIALIZED": "\(1_000_000 + Int(index))", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_DRIVER": "veth",
            "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link", "ID_NET_NAME_MAC": "enxaabbccdd\(index)",
            "SYSTEMD_ALIAS": "/sys/subsystem/net/devices/\(name)", "TAGS": ":systemd:", "CURRENT_TAGS": ":systemd:",
        ])
}

/// A host's devices that are not links: those the namespace harness sees on this machine (10 block devices, 68
/// ttys), so that a change carries the device counts of three subsystems as a host's changes do.
let otherDevices =
    (0..<10).map { number in
        Device(
            syspath: "/sys/devices/virtual/block/loop\(number)", sysname: "loop\(number)", subsystem: "block",
            devtype: "disk", devnode: "/dev/loop\(number)", properties: ["MAJOR": "7", "MINOR": "\(number)"])
    }
    + (0..<68).map { number in
        Device(
            syspath: "/sys/devices/virtual/tty/tty\(number)", sysname: "tty\(number)", subsystem: "tty",
            devnode: "/dev/tty\(number)", properties: ["MAJOR": "4", "MINOR": "\(number)"])
    }

func model(links count: Int, configuration: Configuration = Configuration()) -> Model {
    let links = (1...Int32(count)).map { index in
        Link(
            state: linkState(index, up: true),
            addresses: [LinkAddress(family: .ipv6, address: "fe80::a8bb:ccff:fedd:\(index)", prefixLength: 64)])
    }
    let start = Session.initiate(Model(configuration: configuration, maximumLogPriority: .info)).model
    let snapshot = Snapshot(links: links, devices: (1...Int32(count)).map(netDevice) + otherDevices)
    let enumerated =
        Session.update(start, .enumerated(generation: start.enumerationGeneration, snapshot: snapshot)).model ?? start
    guard !configuration.networkdDispatcherDirectories.isEmpty else { return enumerated }
    // networkd runs and has configured every link: each link's scripts are told its states at the start.
    let administrative = Dictionary(uniqueKeysWithValues: links.map { ($0.index, "configured") })
    return Session.update(enumerated, .networkdStatesRead(running: true, administrative: administrative)).model
        ?? enumerated
}

/// Hooks debounced for 200 ms and networkd-dispatcher's scripts run, as on a host that brought its scripts over.
let dispatching: Configuration = {
    var configuration = Configuration(debounceMilliseconds: 200)
    configuration.networkdDispatcherDirectories = ["/etc/networkd-dispatcher"]
    return configuration
}()

/// The address numbered `number`, one of a load balancer's on one link.
func vip(_ number: Int) -> LinkAddress {
    LinkAddress(family: .ipv4, address: "10.\(number / 250 % 250).\(number % 250).1", prefixLength: 32)
}

/// 2,000 events: each link of the first 1,000 goes down, then up.
let events = (1...Int32(1_000)).flatMap { index in
    [Event.linkChanged(linkState(index, up: false)), .linkChanged(linkState(index, up: true))]
}
var rows: [(String, [String])] = []
for size in sizes.isEmpty ? [1_000, 20_000] : sizes {
    let before = residentBytes()
    var current = model(links: size)
    let perLink = Double(residentBytes() - before) / Double(size)
    var models: [Model] = []
    let update = measure(per: events.count) {
        var model = current
        models = []
        for event in events {
            model = Session.update(model, event).model ?? model
            models.append(model)
        }
    }
    var reportBytes = 0
    let noted = measure(per: events.count) {
        // As the monitors' queue does: each change written into its reply's frame.
        var replies = ContinuingReplies()
        var writer = ChangeWriter()
        var previous = current
        for model in models {
            writer.append(from: previous, to: model, to: &replies)
            previous = model
        }
        reportBytes += replies.message.count
    }
    // Over the first 200 events only (a whole-model diff at 20,000 links is tens of milliseconds), and not under
    // `--once` (an hour under callgrind).
    let compared = models.prefix(200)
    let whole =
        passCount == 1
        ? .nan
        : measure(per: compared.count) {
            var replies = ContinuingReplies()
            var writer = ChangeWriter()
            var previous = current
            for var model in compared {
                model.lastChange = .everything
                writer.append(from: previous, to: model, to: &replies)
                previous = model
            }
            reportBytes += replies.message.count
        }
    // A resync in progress holds each event until the snapshot is in, the previous model kept as the loop keeps it.
    let resyncing = Session.update(current, .monitorOverflowed(source: .netlink)).model ?? current
    let held = (0..<Session.bufferLimit).map { number in
        Event.addressAdded(index: Int32(number % size) + 1, vip(number))
    }
    let buffering = measure(per: held.count) {
        var model = resyncing
        var previous = model
        for event in held {
            previous = model
            model = Session.update(previous, event).model ?? previous
        }
        precondition(model.buffered.count == held.count, "the events were not held")
    }
    // A link holding 4,000 addresses gets 20 more, each announced (the address compared with the link's others).
    var loaded = current
    for number in 0..<4_000 {
        loaded = Session.update(loaded, Event.addressAdded(index: 1, vip(number))).model ?? loaded
    }
    let crowded = measure(per: 20) {
        var model = loaded
        for number in 4_000..<4_020 {
            model = Session.update(model, .addressAdded(index: 1, vip(number))).model ?? model
        }
        precondition(model.links[1]?.addresses.count == 4_021, "the addresses were not added")
    }
    current = models.last ?? current
    var listReply: [UInt8] = []
    let list = measure {
        listReply = (try? JSONTextEncoder().encode(["links": current.sortedLinks.map(LinkReport.init)])) ?? []
    }
    let listBytes = listReply.count
    // The reply again after one link changed, as the control service makes it: from the text it kept.
    var kept = LinkListText()
    kept.note(current)
    kept.keep(kept.make(for: current))
    let changed = Session.update(current, .linkChanged(linkState(1, up: false))).model ?? current
    let relist = measure {
        var list = kept
        list.note(changed)
        precondition(list.make(for: changed).copied == size - 1, "the kept reply was not used")
    }
    // `Monitor`'s first reply: every link and every device, as the control service writes it.
    var stateBytes = 0
    let firstState = measure { stateBytes = ReportJSON.stateParameters(StateReport(current, devices: true)).count }
    var decoded: [LinkReport] = []
    let decode = measure {
        decoded = (try? JSONTextDecoder().decode([String: [LinkReport]].self, from: listReply))?["links"] ?? []
    }
    precondition(decoded.count == size, "the ListLinks reply did not decode")
    // `netdevctl links`: the four fields its table shows, decoded, and the table laid out.
    var linkRows: [LinkRow] = []
    let rowsDecode = measure {
        linkRows = (try? JSONTextDecoder().decode([String: [LinkRow]].self, from: listReply))?["links"] ?? []
    }
    precondition(linkRows.count == size, "the ListLinks reply did not decode as rows")
    var tableBytes = 0
    let table = measure { tableBytes = linkTable(linkRows, legend: true).utf8.count }
    // `--json` prints the reply's links as they came: parsed, kept as a fragment, written again.
    let printed = measure {
        let links = (try? JSONTextDecoder().decode([String: JSONFragment].self, from: listReply))?["links"]
        _ = try? JSONTextEncoder().encodeToString(links)
    }
    let recorder = MetricsRecorder()
    recorder.note(current.links.keys.map { Activity.linkAdded(index: $0) })
    let exporter = MetricsExporter(recorder: recorder, version: "benchmark")
    var metricsBytes = 0
    let metrics = measure { metricsBytes = exporter.render(current, clients: 1).count }
    // A new exporter's first render, where every link is new to it: a start's first `GetMetrics` or textfile write.
    let firstMetrics = measure {
        _ = MetricsExporter(recorder: recorder, version: "benchmark").render(current, clients: 1)
    }
    // `GetMetrics`: the same text as a JSON string, as the daemon writes its reply.
    let getMetrics = measure { _ = exporter.replyParameters(current, clients: 1) }
    let pieces = measure {
        exporter.render(current, clients: 1, chunk: 64 * 1024) { piece in
            _ = piece.withUnsafeBytes { write(devNull, $0.baseAddress, $0.count) }
        }
    }
    rows.append(
        (
            "\(size) links",
            [
                String(format: "%.0f", perLink), String(format: "%.1f", update), String(format: "%.2f", buffering),
                String(format: "%.1f", crowded), String(format: "%.1f", noted),
                String(format: "%.1f", whole), String(format: "%.1f (%d KB)", list / 1_000, listBytes / 1_000),
                String(format: "%.2f", relist / 1_000),
                String(format: "%.1f (%d KB)", firstState / 1_000, stateBytes / 1_000),
                String(format: "%.1f", decode / 1_000),
                String(format: "%.1f", rowsDecode / 1_000),
                String(format: "%.1f (%d KB)", table / 1_000, tableBytes / 1_000),
                String(format: "%.1f", printed / 1_000),
                String(format: "%.1f (%d KB)", metrics / 1_000, metricsBytes / 1_000),
                String(format: "%.1f", firstMetrics / 1_000),
                String(format: "%.1f", getMetrics / 1_000),
                String(format: "%.1f", pieces / 1_000),
            ]
        ))
    _ = reportBytes
}
// The same events with the scripts' book and the debounce held per link, each model kept, as the loop's observers
// keep the one before; measured after the rest, so that its garbage does not fill the heap the next size's model is
// weighed in.
for (number, size) in (sizes.isEmpty ? [1_000, 20_000] : sizes).enumerated() {
    let scripted = model(links: size, configuration: dispatching)
    precondition(scripted.dispatcher.told.count == size, "the scripts were not told the links' states")
    let dispatched = measure(per: events.count) {
        var model = scripted
        var kept: [Model] = []
        for event in events {
            model = Session.update(model, event).model ?? model
            kept.append(model)
        }
        precondition(model.debouncing.count == 1_000, "the links' changes were not debounced")
    }
    rows[number].1.insert(String(format: "%.1f", dispatched), at: 2)
    // A link's hook is slow: its run goes on and its next run waits for it, while the other links change and their
    // runs start and end (`size` of them given out first). Per link change and its run's end, each model kept.
    var slow = model(links: size)
    func change(_ model: inout Model, _ index: Int32, up: Bool) {
        let next = Session.update(model, .linkChanged(linkState(index, up: up)))
        model = next.model ?? model
        for case .runHooks(let run) in next.effects {
            model = Session.update(model, .hookRunFinished(HookRunResult(runID: run.id, hooks: []))).model ?? model
        }
    }
    for up in [false, true] {
        slow = Session.update(slow, .linkChanged(linkState(1, up: up))).model ?? slow
    }
    for index in 2...Int32(size) { change(&slow, index, up: false) }
    precondition(slow.hooks.waiting.count == 1 && slow.hooks.running.count == 1, "no run was held")
    let others = 2...Int32(min(size, 1_001))
    let held = measure(per: others.count * 2) {
        var model = slow
        var kept: [Model] = []
        for index in others {
            change(&model, index, up: true)
            kept.append(model)
            change(&model, index, up: false)
            kept.append(model)
        }
    }
    rows[number].1.insert(String(format: "%.1f", held), at: 3)
    // A monitor's changes while `RequiredInterfaces=nb*` and `RequiredFamily=ipv4` keep the host from being online
    // (every link short of it: their addresses are IPv6), over the first 200 events, each built as the control
    // service builds it (the last change's missing lines reused when the change cannot have altered them).
    let requiring = model(
        links: size, configuration: Configuration(requiredInterfaces: [.init(pattern: "nb*")], requiredFamily: .ipv4))
    precondition(requiring.onlineState == .offline, "the requirement was met")
    var step = requiring
    let requiredModels = events.prefix(200).map { event in
        step = Session.update(step, event).model ?? step
        return step
    }
    let required = measure(per: requiredModels.count) {
        var replies = ContinuingReplies()
        var writer = ChangeWriter(following: requiring)
        var previous = requiring
        for model in requiredModels {
            writer.append(from: previous, to: model, to: &replies)
            previous = model
        }
    }
    rows[number].1.insert(String(format: "%.1f", required), at: 7)
}
let titles = [
    "resident memory per link (bytes)", "session update per event (µs)",
    "the same, hooks debounced, dispatcher scripts (µs)",
    "a link change and its hook run, one run held (µs)",
    "session update per event held during a resync (µs)", "an address added to a link with 4,000 (µs)",
    "change report per event, noted (µs)",
    "the same, RequiredInterfaces= unmet by every link (µs)",
    "change report per event, whole models compared (µs)", "ListLinks reply (ms)",
    "ListLinks reply after one link changed (ms)", "Monitor's first reply, every link and device (ms)",
    "ListLinks reply decoded whole (ms)", "netdevctl links: the table's fields decoded (ms)",
    "netdevctl links: the table laid out (ms)",
    "reply printed, as netdevctl links --json=short (ms)",
    "metrics render (ms)", "metrics render, an exporter's first (ms)", "GetMetrics reply: the render as JSON (ms)",
    "metrics text in 64 KiB pieces, as the textfile (ms)",
]
for (number, title) in titles.enumerated() {
    print(
        title.padding(toLength: 52, withPad: " ", startingAt: 0),
        rows.map { "\($0.0): \($0.1[number])" }.joined(separator: "   "))
}
