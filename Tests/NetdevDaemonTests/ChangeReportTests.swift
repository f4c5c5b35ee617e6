import Foundation
import KernelTestSupport
import Locking
import MobiusCore
import NetdevDaemon
import NetdevSession
import NetdevWire
import Testing
import Varlink

@Suite("Monitor changes")
struct ChangeReportTests {
    /// A random model: some of 12 links (random state, addresses and routes) and some of 20 devices.
    static func randomModel(sequence: Int, using generator: inout SeededGenerator) -> Model {
        var model = Model()
        model.changeSequence = sequence
        model.phase = [.running, .resyncing, .reloading].randomElement(using: &generator)!
        model.isEnumerated = true
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
                syspath: path, sysname: "d\(number)", subsystem: ["net", "tty", "block"][number % 3],
                driver: Bool.random(using: &generator) ? "drv" : nil,
                properties: ["ID_SERIAL": "\(Int.random(in: 0...2, using: &generator))"])
        }
        model.counters.resyncs = Int.random(in: 0...3, using: &generator)
        return model
    }

    @Test("applying each change to the first state gives every later state exactly, devices too, over 500 models")
    func changesRebuildTheState() {
        var generator = SeededGenerator(seed: 0x6e65_7464)
        var model = Self.randomModel(sequence: 1, using: &generator)
        var held = StateReport(model, devices: true)
        for sequence in 2...501 {
            let next = Self.randomModel(sequence: sequence, using: &generator)
            let change = ChangeReport(from: model, to: next)
            held = held.applying(change)
            #expect(held == StateReport(next, devices: true), "after change \(sequence)")
            model = next
        }
    }

    @Test("a change that touches one link carries that link only")
    func oneLinkOneEntry() {
        var generator = SeededGenerator(seed: 7)
        let before = Self.randomModel(sequence: 1, using: &generator)
        var after = before
        after.changeSequence = 2
        let index = before.links.keys.sorted().last!
        after.links[index]?.addresses.append(LinkAddress(family: .ipv6, address: "fd00::1", prefixLength: 64))
        let change = ChangeReport(from: before, to: after)
        #expect(change.links.map(\.index) == [Int(index)])
        #expect(change.removedLinks == [])

        var gone = after
        gone.changeSequence = 3
        gone.links[index] = nil
        #expect(ChangeReport(from: after, to: gone).removedLinks == [Int(index)])
        #expect(ChangeReport(from: after, to: gone).links == [])
    }

    @Test("a change that touches one device carries that device only; a moved one: its new path, its old path gone")
    func oneDeviceOneEntry() {
        var before = Model()
        before.changeSequence = 1
        let disk = Device(syspath: "/sys/block/sda", sysname: "sda", subsystem: "block", properties: ["ID_MODEL": "A"])
        let tty = Device(syspath: "/sys/class/tty/ttyS0", sysname: "ttyS0", subsystem: "tty")
        before.devices = [disk.syspath: disk, tty.syspath: tty]
        var after = before
        after.changeSequence = 2
        after.devices[disk.syspath]?.properties["ID_MODEL"] = "B"
        let change = ChangeReport(from: before, to: after)
        #expect(change.devices.map(\.properties) == [["ID_MODEL": "B"]])
        #expect(change.removedDevices == [])
        var moved = after
        moved.changeSequence = 3
        moved.devices[tty.syspath] = nil
        moved.devices["/sys/class/tty/ttyS1"] = Device(
            syspath: "/sys/class/tty/ttyS1", sysname: "ttyS1", subsystem: "tty")
        let move = ChangeReport(from: after, to: moved)
        #expect(move.devices.map(\.syspath) == ["/sys/class/tty/ttyS1"])
        #expect(move.removedDevices == [tty.syspath])
        // GetState leaves the devices out; Monitor's first state has them, in the order netdevctl lists.
        #expect(StateReport(moved).devices == nil)
        #expect(StateReport(moved, devices: true).devices?.map(\.sysname) == ["sda", "ttyS1"])
    }
}

/// A ``ControlService`` served on a fresh socket path, without a daemon; stopped and removed when released.
final class ServedControl {
    let path = NSTemporaryDirectory() + "netdevd-control-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
    let service: ControlService
    let server: VarlinkServer

    init(loopQueue: DispatchQueue? = nil, batchSent: @escaping @Sendable () -> Void = {}) throws {
        service = ControlService(batchSent: batchSent, loopQueue: loopQueue)
        server = VarlinkServer(
            listening: try VarlinkServer.listen(on: path), interfaces: [service.interface], vendor: "test",
            product: "test", version: "0", url: "")
        server.start()
    }

    deinit {
        server.stop()
        unlink(path)
    }

    /// What ``monitoredStream(models:seed:)`` sets up.
    typealias MonitoredStream = (connection: Connection<Model>, models: [Model], monitor: RawMonitor)

    /// The service connected as the loop's view, `count` random models made from `seed` with the first of them
    /// published, and a monitor that has its first state; the caller disposes of the connection and closes the monitor.
    func monitoredStream(models count: Int, seed: UInt64) -> MonitoredStream {
        let connection = service.view.connect { _ in }
        var generator = SeededGenerator(seed: seed)
        let models = (1...count).map { ChangeReportTests.randomModel(sequence: $0, using: &generator) }
        connection.accept(models[0])
        return (connection, models, monitorWithFirstState())
    }

    /// A monitor of the service reading on a thread of its own (a large receive buffer, so that it never holds a
    /// send up), once its first state has come (up to 10 s).
    func monitorWithFirstState() -> RawMonitor {
        let monitor = RawMonitor(path: path, receiveBuffer: 4 << 20)
        monitor.readUntilClosed(DispatchGroup())
        let deadline = Date().addingTimeInterval(10)
        while !monitor.hasSequence(1) && Date() < deadline { usleep(1_000) }
        return monitor
    }
}

@Suite("io.netdevd before the first model")
struct ControlServiceStartTests {
    @Test("a query that arrives before the first enumeration finished is answered from the first complete model")
    func earlyQueryWaits() throws {
        let served = try ServedControl()
        defer { withExtendedLifetime(served) {} }
        let (path, service) = (served.path, served.service)
        let answer = Protected<StateReport?>(nil)
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let reply = try? VarlinkClient(path: path).call("io.netdevd.GetState")
            answer.withLock { $0 = try? reply?["state"]?.decode(as: StateReport.self) }
            answered.signal()
        }
        #expect(waitUntil { service.waitingCalls == 1 }, "the call never reached the service")
        let connection = service.view.connect { _ in }
        // The loop's models while it enumerates (no links yet): the call goes on waiting.
        var model = Model()
        model.phase = .enumerating
        model.changeSequence = 6
        connection.accept(model)
        #expect(service.waitingCalls == 1, "answered from a model that has not finished enumerating")
        model.phase = .running
        model.isEnumerated = true
        model.changeSequence = 7
        connection.accept(model)
        #expect(answered.wait(timeout: .now() + 5) == .success)
        #expect(answer.withLock { $0 }?.sequence == 7)
        #expect(service.waitingCalls == 0)
        connection.dispose()
    }
}

@Suite("io.netdevd Monitor while the model changes")
struct MonitorOrderingTests {
    @Test("monitors that join while 200 models are published each see contiguous changes that rebuild the last state")
    func joinDuringChanges() throws {
        let served = try ServedControl()
        defer { withExtendedLifetime(served) {} }
        let (path, service) = (served.path, served.service)
        let connection = service.view.connect { _ in }
        defer { connection.dispose() }
        var generator = SeededGenerator(seed: 42)
        let models = (1...200).map { ChangeReportTests.randomModel(sequence: $0, using: &generator) }
        connection.accept(models[0])

        let last = models.count
        let firsts = Protected<[Int]>([])
        let states = Protected<[Int: StateReport]>([:])
        let gaps = Protected<[String]>([])
        let done = DispatchGroup()
        // Client k joins at model 30 + 40 k: it calls while the next 20 models are published, and the publisher
        // waits for its first state only after those, so every join meets a stream in motion, and starts mid-stream.
        let joinsAt = [30, 70, 110, 150]
        let joined = joinsAt.map { _ in DispatchSemaphore(value: 0) }
        func join(_ client: Int) {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                guard let monitor = try? VarlinkClient(path: path) else { return }
                var held: StateReport?
                try? monitor.callWithMore("io.netdevd.Monitor") { reply in
                    if let first = try? reply["state"]?.decode(as: StateReport.self) {
                        firsts.withLock { $0.append(first.sequence) }
                        held = first
                        joined[client].signal()
                    } else if let change = try? reply["change"]?.decode(as: ChangeReport.self), let current = held {
                        if change.sequence != current.sequence + 1 {
                            gaps.withLock { $0.append("client \(client): \(current.sequence) -> \(change.sequence)") }
                        }
                        held = current.applying(change)
                    }
                    return held.map { $0.sequence < last } ?? true
                }
                states.withLock { $0[client] = held }
            }
        }
        for (index, model) in models.enumerated().dropFirst() {
            if let client = joinsAt.firstIndex(of: index) { join(client) }
            if let client = joinsAt.firstIndex(of: index - 20) {
                #expect(joined[client].wait(timeout: .now() + 10) == .success, "client \(client) got no first state")
            }
            connection.accept(model)
            usleep(1_000)
        }
        #expect(done.wait(timeout: .now() + 120) == .success, "a monitor never reached the last model")
        #expect(gaps.withLock { $0 } == [])
        // The point is joining mid-stream: every client started after the first model and before the last.
        #expect(firsts.withLock { $0 }.filter { (2..<last).contains($0) }.count == 4, "\(firsts.withLock { $0 })")
        let expected = StateReport(models[last - 1], devices: true)
        #expect(states.withLock { $0.count } == 4)
        for (client, state) in states.withLock({ $0 }) {
            #expect(state == expected, "client \(client) rebuilt a different state")
        }
    }

    @Test("a burst of changes reaches a monitor in a write per send interval, not one per change, nothing lost")
    func burstCoalesced() throws {
        let served = try ServedControl()
        defer { withExtendedLifetime(served) {} }
        let (connection, models, monitor) = served.monitoredStream(models: 80, seed: 9)
        defer {
            connection.dispose()
            close(monitor.fd)
        }
        let deadline = Date().addingTimeInterval(10)
        let readsBefore = monitor.readCount
        // A change every 2 ms: sent one by one, that is a write, and a read, per change.
        let began = Date()
        for model in models.dropFirst() {
            connection.accept(model)
            usleep(2_000)
        }
        let published = Date().timeIntervalSince(began)
        while !monitor.hasSequence(models.count) && Date() < deadline { usleep(1_000) }
        let reads = monitor.readCount - readsBefore
        let (sequences, state) = monitor.decoded()
        #expect(sequences == Array(1...models.count))
        #expect(state == StateReport(models[models.count - 1], devices: true))
        // One send when the burst begins, then at most one per interval while it lasts and one for what is left;
        // the client may read a large send in two parts.
        let interval = Double(ControlService.monitorSendIntervalMilliseconds) / 1_000
        let sends = Int(published / interval) + 2
        #expect(reads <= 2 * sends, "\(reads) reads for \(models.count - 1) changes in \(published) s")
    }
}

@Suite("Monitors and the loop's passes")
struct MonitorPassTests {
    @Test("the changes the loop publishes in one pass go to the monitors in one send, not the first alone")
    func onePassOneWrite() throws {
        let loop = DispatchQueue(label: "netdevd.test.loop")
        let batches = Locked(0)
        let served = try ServedControl(loopQueue: loop, batchSent: { batches.withLock { $0 += 1 } })
        defer { withExtendedLifetime(served) {} }
        let connection = served.service.view.connect { _ in }
        defer { connection.dispose() }
        var generator = SeededGenerator(seed: 11)
        let models = (1...21).map { ChangeReportTests.randomModel(sequence: $0, using: &generator) }
        loop.sync { connection.accept(models[0]) }
        let monitor = served.monitorWithFirstState()
        defer { close(monitor.fd) }
        let deadline = Date().addingTimeInterval(10)
        loop.sync { connection.accept(models[1]) }
        while !monitor.hasSequence(2) && Date() < deadline { usleep(1_000) }
        // Quiet for longer than the send interval since that send: the next change is due to go at once.
        usleep(UInt32(ControlService.monitorSendIntervalMilliseconds * 2_000))
        let batchesBefore = batches.withLock { $0 }
        loop.sync {
            for model in models.dropFirst(2) {
                connection.accept(model)
                usleep(500)
            }
        }
        while !monitor.hasSequence(models.count) && Date() < deadline { usleep(1_000) }
        #expect(monitor.decoded().sequences == Array(1...models.count))
        #expect(batches.withLock { $0 } - batchesBefore == 1, "the pass's 19 changes went in more than one send")
    }
}

@Suite("Hook directories")
struct HookDirectoryTests {
    @Test("backups and dpkg/ucf leftovers beside a hook are never run")
    func leftoversSkipped() throws {
        let directory = NSTemporaryDirectory() + "netdevd-hooks-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["10-log", "10-log~", "10-log.dpkg-old", "10-log.dpkg-dist", "20-x.ucf-dist", ".hidden", "30-y"] {
            #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data("#!/bin/sh\n".utf8)))
        }
        let runner = HookRunner(directories: [directory], log: { _ in })
        #expect(runner.hooks().map(\.name) == ["10-log", "30-y"])
    }
}

@Suite("Recordings read back")
struct RecordingTests {
    @Test("a start line that cannot be read is an error with its line; a file two runs appended to reads as the last")
    func startLines() throws {
        #expect(throws: RecordingError.self) { try Recording(text: "{\"start\":{\"configuration\":7}}\n", file: "r") }
        do {
            _ = try Recording(text: "{\"start\":{\"configuration\":7}}\n", file: "r")
        } catch {
            #expect(error.line == 1 && error.message.hasPrefix("a run's start line whose configuration"))
        }
        let configuration = Configuration(hookParallelism: 3)
        let start =
            "{\"start\":{\"configuration\":"
            + String(decoding: try JSONEncoder().encode(configuration), as: UTF8.self) + "}}"
        let tick = String(decoding: try JSONEncoder().encode(Event.watchdogTick), as: UTF8.self)
        let recording = try Recording(text: [start, tick, tick, start, tick].joined(separator: "\n") + "\n")
        #expect(recording.configuration == configuration)
        #expect(recording.events == [.watchdogTick])
        #expect(recording.earlierRuns == 1)
    }
}
