import Foundation
import KernelTestSupport
import NetdevDaemon
import NetdevSession
import Testing
import Varlink

/// A call's parameters are checked as systemd's sd-varlink checks them, against the interface description the
/// server publishes: what GetInterfaceDescription says is what is enforced.
@Suite("io.netdevd's parameters")
struct ControlParameterTests {
    /// A served service with a complete model (calls are answered at once); the model's connection is disposed
    /// with it.
    final class Served {
        let control: ServedControl
        private let dispose: () -> Void
        var path: String { control.path }
        var service: ControlService { control.service }

        init() throws {
            control = try ServedControl()
            let connection = control.service.view.connect { _ in }
            var model = Model()
            model.phase = .running
            model.isEnumerated = true
            model.changeSequence = 1
            connection.accept(model)
            dispose = { connection.dispose() }
        }

        deinit { dispose() }
    }

    /// The error `method` with `parameters` is answered with, or `nil` for a reply.
    static func refusal(
        _ method: String, _ parameters: [String: JSONValue], at path: String
    ) throws -> (name: String, parameters: [String: JSONValue])? {
        do {
            _ = try VarlinkClient(path: path).call(method, parameters)
            return nil
        } catch .error(let name, let parameters) {
            return (name, parameters)
        }
    }

    @Test("every declared method is served and every served method declared, each with the parameters it checks")
    func descriptionIsWhatIsEnforced() throws {
        let served = try Served()
        let interface = served.service.interface
        #expect(Set(interface.signatures.keys) == Set(interface.methods.keys))
        let published = try VarlinkClient(path: served.path).call(
            "org.varlink.service.GetInterfaceDescription", ["interface": .string("io.netdevd")])
        #expect(published["description"] == .string(interface.description))
        for (member, signature) in interface.signatures.sorted(by: { $0.key < $1.key }) where member != "Monitor" {
            let method = "io.netdevd." + member
            // An undeclared parameter is refused by name.
            let unknown = try Self.refusal(method, ["patern": .string("x")], at: served.path)
            #expect(unknown?.name == VarlinkStandardError.invalidParameter, "\(member)")
            #expect(unknown?.parameters["parameter"] == .string("patern"), "\(member)")
            for (name, type) in signature.parameters {
                // A value of another type is refused by name; one of the declared type is taken.
                let wrong = try Self.refusal(method, [name: .number(1)], at: served.path)
                #expect(wrong?.parameters["parameter"] == .string(name), "\(member).\(name) took a number")
                #expect(type == .optional(.string), "\(member).\(name): a type this test does not try")
                #expect(try Self.refusal(method, [name: .string("*")], at: served.path) == nil, "\(member).\(name)")
            }
        }
    }

    @Test("a missing required parameter is refused by name; undeclared ones before declared ones, by name order")
    func missingAndOrder() throws {
        let served = try Served()
        let missing = try Self.refusal("org.varlink.service.GetInterfaceDescription", [:], at: served.path)
        #expect(missing?.name == VarlinkStandardError.invalidParameter)
        #expect(missing?.parameters["parameter"] == .string("interface"))
        let two = try Self.refusal(
            "io.netdevd.ListLinks", ["pattern": .bool(true), "zeta": .null, "alpha": .null], at: served.path)
        #expect(two?.parameters["parameter"] == .string("alpha"))
        // `null` is an absent optional parameter.
        #expect(try Self.refusal("io.netdevd.ListLinks", ["pattern": .null], at: served.path) == nil)
    }

    @Test(
        "`more` on a method with one answer gets that answer, the last; `oneway` gets none, and a oneway Monitor is not kept"
    )
    func moreAndOneway() throws {
        let served = try Served()
        let raw = RawVarlink(served.path)
        raw.send(#"{"method":"io.netdevd.GetState","more":true}"#)
        let reply = try #require(raw.receive())
        #expect(reply["continues"] == nil && reply["parameters"] != nil, "\(reply)")
        // Oneway calls, then one that is answered: its reply is the first to come.
        raw.send(#"{"method":"io.netdevd.GetState","oneway":true}"#)
        raw.send(#"{"method":"io.netdevd.Monitor","more":true,"oneway":true}"#)
        raw.send(#"{"method":"io.netdevd.ListLinks","parameters":{"pattern":"none*"}}"#)
        let next = try #require(raw.receive())
        #expect(next["parameters"] == .object(["links": .array([])]), "\(next)")
        #expect(served.service.monitorCount == 0)
    }
}

/// `Reload` answers with how the reload it asked for ended, as `netdevctl reload` and `systemctl reload` report it.
@Suite("io.netdevd Reload")
struct ControlReloadTests {
    @Test(
        "Reload is answered by the reload that read the files after it: its warnings, or ConfigurationRejected",
        .enabled(if: getuid() == 0, "needs root: only root may call Reload"))
    func reloadAnswers() throws {
        let control = try ServedControl()
        let requests = Protected(0)
        let connection = control.service.view.connect { event in
            if case .reloadRequested = event { requests.withLock { $0 += 1 } }
        }
        defer { connection.dispose() }
        var model = Model()
        model.phase = .running
        model.isEnumerated = true
        model.changeSequence = 1
        connection.accept(model)
        let path = control.path
        for (number, outcome) in [
            ReloadOutcome(
                covers: 1, warnings: ["a.conf:2: unknown key 'X' in [Online]; the line is ignored"], errors: []),
            ReloadOutcome(covers: 2, warnings: [], errors: ["b.conf:0: is not UTF-8 text"]),
        ].enumerated() {
            let answer = Protected<String?>(nil)
            Thread.detachNewThread {
                do throws(VarlinkClientError) {
                    let reply = try VarlinkClient(path: path).call("io.netdevd.Reload")
                    answer.withLock { $0 = "warnings \(reply["warnings"] ?? .null)" }
                } catch .error(let name, let parameters) {
                    answer.withLock { $0 = "\(name) \(parameters["errors"] ?? .null)" }
                } catch {
                    answer.withLock { $0 = "\(error)" }
                }
            }
            #expect(waitUntil { requests.withLock { $0 } == number + 1 }, "the request never reached the loop")
            // The reload before this request (it answered only earlier ones) leaves the call waiting.
            model.reloadRequests = number + 1
            model.lastReload = number == 0 ? nil : ReloadOutcome(covers: number, warnings: [], errors: [])
            connection.accept(model)
            #expect(control.service.waitingReloads == 1)
            model.lastReload = outcome
            connection.accept(model)
            #expect(waitUntil { answer.withLock { $0 } != nil })
            #expect(control.service.waitingReloads == 0)
            let expected =
                number == 0
                ? "warnings [\"a.conf:2: unknown key 'X' in [Online]; the line is ignored\"]"
                : "io.netdevd.ConfigurationRejected [\"b.conf:0: is not UTF-8 text\"]"
            #expect(answer.withLock { $0 } == expected)
        }
    }
}

/// A connection that sends raw Varlink messages and reads replies one by one.
final class RawVarlink {
    private let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    private var buffered: [UInt8] = []

    init(_ path: String) {
        _ = withUnixSocketAddress(path) { connect(fd, $0, $1) }
    }

    func send(_ message: String) {
        let bytes = Array(message.utf8) + [0]
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
    }

    /// The next reply, or `nil` when the connection ends or nothing comes within 5 s.
    func receive() -> [String: JSONValue]? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !buffered.contains(0) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 5_000) > 0 else { return nil }
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            buffered += chunk[0..<count]
        }
        let end = buffered.firstIndex(of: 0)!
        let message = Array(buffered[..<end])
        buffered.removeFirst(end + 1)
        return try? JSONTextDecoder().decode([String: JSONValue].self, from: message)
    }

    deinit { close(fd) }
}
