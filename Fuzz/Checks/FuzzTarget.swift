import FoundationEssentials
import Locking
import MobiusCore
import NetdevDaemon
import NetdevSession
import NetdevWire
import Netlink
import SystemSupport
import Systemd
import Udev
import Varlink

#if canImport(Glibc)
import Glibc
#endif

/// The parsers netdevd runs on input it does not control, one fuzz target each. A target's ``check(_:)`` takes any
/// bytes, runs them through the code the daemon runs on such input, and traps when that code breaks a promise it
/// makes (a value out of its bounds, a conversion that does not read back, a call left without its reply). Contract:
/// for every input, a check either returns or traps; it never blocks, touches the system, or keeps state that grows
/// from one input to the next. libFuzzer (`Fuzz/Entry`, `make fuzz`) and the corpus replay test
/// (`Tests/FuzzCorpusTests`) call the same checks, so every input kept in `Fuzz/Corpus` is a regression test.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `netdevd.conf` and its drop-ins: the input is up to 8 files separated by NUL bytes, the first the main file.
    case config
    /// A time span, as `TimeoutSec=` or `netdevctl wait-online --timeout` read it.
    case timeSpan = "time-span"
    /// Varlink's framing (the input cut into reads of 1 to 61 bytes, as the first byte says) and each message
    /// decoded as a call.
    case varlink
    /// One message answered by the io.netdevd service, from bytes to reply messages, for root (first byte even) or
    /// another user (odd); the service holds a model of a few links and devices.
    case methods
    /// An rtnetlink datagram, parsed, turned into session events and applied to a running session.
    case netlink
    /// A uevent as the kernel sends it (`action@devpath`, then NUL-separated `KEY=value`), read as libudev reads it
    /// into a device, turned into a session event and applied to a running session.
    case udev
    /// Journal fields (NUL-separated name, value, name, value, ...), their names normalised, written as netdevd
    /// writes entries to standard error.
    case journal
    /// A `--record` file, read as `--replay` reads it.
    case record

    /// The input being checked, named in the message of a trap (the corpus replay sets it: a kept input that
    /// crashes is then named, not only its target).
    @TaskLocal public static var input: String?

    /// Runs `bytes` through this target's code; traps when the code breaks its contract.
    public func check(_ bytes: [UInt8]) {
        switch self {
        case .config: Self.checkConfiguration(bytes)
        case .timeSpan: Self.checkTimeSpan(bytes)
        case .varlink: Self.checkFraming(bytes)
        case .methods: MethodsFixture.shared.check(bytes)
        case .netlink: Self.checkNetlink(bytes)
        case .udev: Self.checkUevent(bytes)
        case .journal: Self.checkJournal(bytes)
        case .record: Self.checkRecording(bytes)
        }
    }

    // MARK: Configuration

    static func checkConfiguration(_ bytes: [UInt8]) {
        let parts = bytes.split(separator: 0, maxSplits: 7, omittingEmptySubsequences: false)
        let files = parts.enumerated().map { index, part in
            (name: index == 0 ? "netdevd.conf" : "netdevd.conf.d/\(index).conf", bytes: Array(part))
        }
        let names = Set(files.map(\.name))
        func placed(_ diagnostic: Diagnostic) {
            require(names.contains(diagnostic.file), "a diagnostic names a file not read: \(diagnostic)")
            let size = files.first { $0.name == diagnostic.file }?.bytes.count ?? 0
            require(
                (0...size + 1).contains(diagnostic.line), "a diagnostic's line is not in its file: \(diagnostic)")
            require(!diagnostic.message.isEmpty, "a diagnostic says nothing")
        }
        switch ConfigurationLoader.parse(files: files) {
        case .loaded(let configuration, let warnings):
            warnings.forEach(placed)
            let span = 0...TimeSpan.maximumMilliseconds
            require(span.contains(configuration.hookTimeoutMilliseconds), "TimeoutSec= out of bounds")
            require(span.contains(configuration.debounceMilliseconds), "DebounceSec= out of bounds")
            require(
                configuration.stopTimeoutMilliseconds.map(span.contains) ?? true, "StopTimeoutSec= out of bounds")
            require(configuration.hookParallelism >= 1, "Parallelism= below 1")
            require(configuration.requiredInterfaces.allSatisfy { !$0.pattern.isEmpty }, "an empty requirement")
            // A recording starts with the configuration: what loaded must read back from JSON as it was.
            let decoded = readBack(configuration)
            require(decoded == configuration, "the configuration does not read back from JSON: \(configuration)")
        case .rejected(let errors):
            require(!errors.isEmpty, "rejected without a reason")
            errors.forEach(placed)
        }
    }

    // MARK: Time spans

    static func checkTimeSpan(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        switch TimeSpan.parse(text) {
        case .success(.finite(let milliseconds)):
            require((0...TimeSpan.maximumMilliseconds).contains(milliseconds), "\(milliseconds) ms out of bounds")
            require(
                TimeSpan.parse("\(milliseconds)ms") == .success(.finite(milliseconds: milliseconds)),
                "\(milliseconds)ms does not read as itself")
        case .success(.infinity):
            let trimmed = String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
            require(trimmed == "infinity", "infinity from '\(text)'")
        case .failure:
            break
        }
    }

    // MARK: Varlink framing

    static func checkFraming(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let readSize = Int(first) % 61 + 1
        let stream = bytes.dropFirst()
        let limit = 512
        var framing = VarlinkFraming(maximumMessageBytes: limit)
        var messages: [[UInt8]] = []
        var refusedAt: Int?
        var offset = stream.startIndex
        while offset < stream.endIndex {
            let end = min(offset + readSize, stream.endIndex)
            do {
                messages += try framing.append(stream[offset..<end])
            } catch {
                refusedAt = end
                break
            }
            offset = end
        }
        // The messages are the stream cut at each NUL, in order, none lost or merged.
        let expected = stream.split(separator: 0, omittingEmptySubsequences: false).dropLast().map(Array.init)
        require(Array(expected.prefix(messages.count)) == messages, "framing cut the stream wrongly")
        if let refusedAt {
            // Refused when what follows the last NUL read so far is longer than the limit (the connection is then
            // closed, and the messages of that last read with it).
            let afterLastMessage = stream[..<refusedAt].lastIndex(of: 0).map { $0 + 1 } ?? stream.startIndex
            let unterminated = refusedAt - afterLastMessage
            require(unterminated > limit, "\(unterminated) bytes without a NUL refused as too long")
        } else {
            require(messages.count == expected.count, "framing lost a message")
        }
        for message in messages {
            switch VarlinkCall.decode(message) {
            case .success(let call):
                // What a client sends must read back as the same call once encoded (netdevctl encodes its calls so).
                guard let encoded = try? VarlinkFraming.encode(call) else {
                    trap("a decoded call does not encode: \(call)")
                }
                require(encoded.last == 0 && encoded.dropLast().allSatisfy { $0 != 0 }, "a NUL inside a message")
                let again = VarlinkCall.decode(Array(encoded.dropLast()))
                require(again == .success(call), "a call does not read back: \(call)")
            case .failure(let problem):
                require(!problem.description.isEmpty, "a message refused without a reason")
            }
        }
    }

    // MARK: Netlink

    static func checkNetlink(_ bytes: [UInt8]) {
        let parsed = Result { () throws(NetlinkParseError) in try RouteMessageParser.parse(bytes) }
        // The watcher reads a datagram where it was received, in a buffer still holding an earlier, longer one:
        // that read must agree with a read of the datagram alone.
        let stale = bytes + [UInt8](repeating: 0xA5, count: 64) + bytes
        let inPlace = Result { () throws(NetlinkParseError) in try RouteMessageParser.parse(stale, count: bytes.count) }
        require(parsed == inPlace, "read alone \(parsed), in place \(inPlace)")
        let messages: [RouteMessage]
        switch parsed {
        case .failure(let error):
            // Refused with its reason and a place inside the datagram (the watcher logs it and resyncs).
            require(!error.reason.isEmpty && error.offset >= 0 && error.offset < max(bytes.count, 1), "\(error)")
            return
        case .success(let read):
            messages = read
        }
        var model = runningModel()
        for message in messages {
            if let event = KernelValues.event(message) {
                model = Session.update(model, event).model ?? model
            }
            // What the message said is what the model holds.
            switch message {
            case .newLink(let link):
                let held = model.links[link.index]?.state
                require(
                    held?.name == link.name && held?.mtu == link.mtu.map(Int.init)
                        && held?.macAddress == link.macAddress && held?.isUp == link.flags.contains(.up),
                    "link \(link) held as \(String(describing: held))")
            case .deletedLink(let link):
                require(model.links[link.index] == nil, "link \(link.index) still held after its deletion")
            default:
                break
            }
        }
        checkModel(model)
    }

    // MARK: udev

    static func checkUevent(_ bytes: [UInt8]) {
        let parts = bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        var properties: [String: String] = [:]
        for part in parts.dropFirst() {
            guard let equals = part.firstIndex(of: "=") else { continue }
            properties[String(part[..<equals])] = String(part[part.index(after: equals)...])
        }
        // The header, `action@devpath`, as the kernel writes it; the properties say the same (libudev uses those).
        if let header = parts.first, let at = header.firstIndex(of: "@") {
            if properties["ACTION"] == nil { properties["ACTION"] = String(header[..<at]) }
            if properties["DEVPATH"] == nil { properties["DEVPATH"] = String(header[header.index(after: at)...]) }
        }
        guard let devpath = properties["DEVPATH"], !devpath.isEmpty else { return }
        let devnode = properties["DEVNAME"].map { $0.hasPrefix("/") ? $0 : "/dev/" + $0 }
        let device = UdevDevice(
            syspath: "/sys" + devpath,
            sysname: devpath.split(separator: "/").last.map(String.init) ?? "",
            subsystem: properties["SUBSYSTEM"], devtype: properties["DEVTYPE"], devnode: devnode,
            driver: properties["DRIVER"], action: properties["ACTION"],
            sequenceNumber: properties["SEQNUM"].flatMap { UInt64($0) }, properties: DeviceProperties(properties))
        let event = KernelValues.event(device)
        switch event {
        case .deviceRemoved(let syspath):
            require(syspath == device.syspath && device.action == "remove", "a remove for another device")
        case .deviceMoved(let moved, let from):
            require(moved.syspath == device.syspath && from.hasPrefix("/"), "a move from '\(from)'")
        case .deviceChanged(let changed, _):
            require(changed.syspath == device.syspath, "a change for another device")
        default:
            trap("a uevent became \(event)")
        }
        var model = runningModel()
        model.devices["/sys/devices/virtual/tty/tty0"] = Device(
            syspath: "/sys/devices/virtual/tty/tty0", sysname: "tty0", subsystem: "tty")
        let before = model.devices[device.syspath]
        model = Session.update(model, event).model ?? model
        checkModel(model)
        // Every field of the uevent reaches the device the model holds: a device of a tracked subsystem is held
        // with all of them; a removed one is not held; one of another subsystem changes nothing held there.
        if device.action == "remove" {
            require(model.devices[device.syspath] == nil, "\(device.syspath) held after \(event)")
            return
        }
        guard model.configuration.trackedSubsystems.contains(device.subsystem ?? "") else {
            let after = model.devices[device.syspath]
            require(after == nil || after == before, "\(device.syspath) of an untracked subsystem held after \(event)")
            return
        }
        guard let held = model.devices[device.syspath] else { trap("\(device.syspath) not held after \(event)") }
        require(held.properties.dictionary == properties, "properties \(properties) held as \(held.properties)")
        require(
            held.subsystem == (device.subsystem ?? "") && held.devtype == device.devtype
                && held.driver == device.driver && held.devnode == devnode && held.sysname == device.sysname,
            "\(device) held as \(held)")
    }

    // MARK: Journal

    static func checkJournal(_ bytes: [UInt8]) {
        let parts = bytes.split(separator: 0, omittingEmptySubsequences: false)
        var entry = JournalEntry(message: String(decoding: parts.first ?? [], as: UTF8.self))
        var index = 1
        while index + 1 < parts.count {
            let name = JournalFieldName.normalizing(String(decoding: parts[index], as: UTF8.self))
            require((try? JournalFieldName(validating: name.rawValue)) == name, "'\(name)' is not a valid name")
            require(JournalFieldName.normalizing(name.rawValue) == name, "normalising '\(name)' changes it")
            entry.append(name, bytes: Array(parts[index + 1]))
            index += 2
        }
        // Lines as journald cuts them: at each "\n" byte.
        let newline = UInt8(ascii: "\n")
        let readable = Array(Journal.readableLine(entry).utf8)
        require(readable.last == newline && !readable.dropLast().contains(newline), "not one line: \(readable)")
        let prefix = Array("<\(entry.priority.rawValue)>".utf8)
        let lines = Array(Journal.prefixedLines(entry).utf8).split(separator: newline)
        require(lines.allSatisfy { $0.starts(with: prefix) }, "a line without its priority: \(lines)")
    }

    // MARK: Recordings

    static func checkRecording(_ bytes: [UInt8]) {
        let recording: Recording
        do {
            recording = try Recording(text: String(decoding: bytes, as: UTF8.self))
        } catch {
            require(error.line >= 0 && !error.message.isEmpty, "an error without its place or reason")
            return
        }
        // What was read writes out as netdevd records (with its encoder) and reads back the same (a replay of a
        // replay agrees).
        let encoder = JSONTextEncoder()
        var lines: [String] = []
        if let configuration = recording.configuration {
            guard let line = try? encoder.encode(["start": ["configuration": configuration]]) else {
                trap("a configuration read from a recording does not encode")
            }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        for event in recording.events {
            guard let line = try? encoder.encode(event) else {
                trap("an event read from a recording does not encode: \(event)")
            }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        let again: Recording
        do {
            again = try Recording(text: lines.joined(separator: "\n"))
        } catch {
            trap("a recording written back does not read: \(error)")
        }
        require(again.events == recording.events, "a recording's events do not read back")
        require(again.configuration == recording.configuration, "a recording's configuration does not read back")
    }

    // MARK: Helpers

    static func readBack(_ configuration: Configuration) -> Configuration? {
        guard let data = try? JSONTextEncoder().encode(configuration) else { return nil }
        return try? JSONTextDecoder().decode(Configuration.self, from: data)
    }

    /// A session past its enumeration, with a loopback link, as the daemon's is when events arrive.
    static func runningModel() -> Model {
        var model = Model()
        model.phase = .running
        model.isEnumerated = true
        model.links[1] = Link(
            state: LinkState(
                index: 1, name: "lo", isUp: true, hasLowerUp: true, isLoopback: true, kernelState: .unknown))
        return model
    }

    /// What holds of every model: links are filed under their own index, devices under their own path.
    static func checkModel(_ model: Model) {
        for (index, link) in model.links {
            require(link.index == index, "link \(link.index) filed under \(index)")
        }
        for (path, device) in model.devices {
            require(device.syspath == path, "device \(device.syspath) filed under \(path)")
        }
        _ = model.onlineState
    }
}

/// The io.netdevd service and a server to route calls to it, made once: the methods target answers every input
/// with the same model, and nothing it does is kept (each call's client counts as gone once it is answered).
final class MethodsFixture: Sendable {
    static let shared = MethodsFixture()

    /// GetMetrics renders the fixture's model through a real exporter.
    static let exporter = MetricsExporter(recorder: MetricsRecorder(), version: "0")
    let service = ControlService(metricsReply: { model, reply in
        MethodsFixture.exporter.replyParameters(model, clients: 0, into: &reply)
    })
    let server: VarlinkServer
    let view: MobiusCore.Connection<Model>

    private init() {
        // Never started: an unbound socket only satisfies the initialiser (no file, nothing listens).
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        server = VarlinkServer(
            listening: listener, interfaces: [service.interface], vendor: "fuzz", product: "netdevd", version: "0",
            url: "")
        // The loop's part of a Reload: the request is counted and the reload ends at once, as the session would
        // end it; the view then answers the call.
        let loop = Locked<(model: Model?, view: MobiusCore.Connection<Model>?)>((nil, nil))
        view = service.view.connect { event in
            guard case .reloadRequested = event else { return }
            let (model, view) = loop.withLock { state -> (Model?, MobiusCore.Connection<Model>?) in
                guard var model = state.model else { return (nil, nil) }
                model.reloadRequests += 1
                model.lastReload = ReloadOutcome(covers: model.reloadRequests, warnings: [], errors: [])
                state.model = model
                return (model, state.view)
            }
            if let model { view?.accept(model) }
        }
        var model = FuzzTarget.runningModel()
        for index in Int32(2)...6 {
            let state = LinkState(
                index: index, name: index % 2 == 0 ? "veth\(index)" : "eth\(index)", kind: "veth", mtu: 1500,
                isUp: index != 3, hasLowerUp: index != 4, isLoopback: false, kernelState: index == 4 ? .down : .up)
            model.links[index] = Link(
                state: state, addresses: [LinkAddress(family: .ipv4, address: "10.0.0.\(index)", prefixLength: 24)],
                defaultRoutes: index == 2 ? [DefaultRoute(family: .ipv4, gateway: "10.0.0.1")] : [])
        }
        for (path, subsystem) in [("/sys/devices/virtual/tty/tty0", "tty"), ("/sys/block/sda", "block")] {
            model.devices[path] = Device(
                syspath: path, sysname: String(path.split(separator: "/").last!), subsystem: subsystem,
                properties: ["ID_SERIAL": "x"])
        }
        model.changeSequence = 1
        loop.withLock { $0 = (model, view) }
        view.accept(model)
    }

    func check(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let peer = VarlinkPeer(pid: 1, uid: first % 2 == 0 ? 0 : 65534, gid: 0)
        let message = Array(bytes.dropFirst())
        let replies = Locked<[[UInt8]]>([])
        if let problem = server.answer(message, from: peer, replies: { reply in replies.withLock { $0.append(reply) } })
        {
            require(!problem.description.isEmpty, "a message refused without a reason")
            return
        }
        guard case .success(let call) = VarlinkCall.decode(message) else {
            trap("answered a message that is not a call")
        }
        let sent = replies.withLock { $0 }
        if call.oneway {
            require(sent.isEmpty, "a reply to a oneway call")
            return
        }
        require(!sent.isEmpty, "no reply to \(call.method)")
        var decoded: [VarlinkReply] = []
        for message in sent {
            require(message.last == 0 && message.dropLast().allSatisfy { $0 != 0 }, "a reply is not one message")
            // Foundation's decoder, a reader independent of netdevd's own, and netdevd's, which netdevctl uses.
            guard let reply = try? JSONDecoder().decode(VarlinkReply.self, from: Data(message.dropLast())),
                (try? JSONTextDecoder().decode(VarlinkReply.self, from: Array(message.dropLast()))) == reply
            else {
                trap("a reply is not a Varlink reply: \(String(decoding: message, as: UTF8.self))")
            }
            decoded.append(reply)
        }
        require(decoded.dropLast().allSatisfy(\.continues), "a reply after the last one")
        if let last = decoded.last, last.continues {
            // Only a monitor goes on, and only for a caller who asked for more; its client is gone after the first.
            require(call.more && call.method == "io.netdevd.Monitor" && decoded.count == 1, "\(call) goes on")
        }
    }
}

/// Traps with `message` when `condition` does not hold; unlike `precondition`, the message is printed in a release
/// build too, so a crash a fuzzer finds says which promise broke.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { trap(message()) }
}

/// Traps with `message`, after the name of the input being checked when one is known (``FuzzTarget/input``).
func trap(_ message: String) -> Never {
    fatalError((FuzzTarget.input.map { "\($0): " } ?? "") + message)
}
