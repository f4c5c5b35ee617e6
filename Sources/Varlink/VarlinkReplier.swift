import Dispatch
import Locking
import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// Answers one call: replies go back in order (through the server's queue to a connection, or to the caller of
/// ``VarlinkServer/answer(_:from:replies:)`` on the thread that replies). For a call with `more`, reply with
/// `continues: true` as often as needed and once without; ``isCancelled`` turns true (and ``onCancel(_:)`` runs)
/// when the client goes away or was too slow.
public final class VarlinkReplier: Sendable {
    /// Takes each reply message (NUL-terminated) and whether more follow: to a connection, or to an in-process
    /// caller (``VarlinkServer/answer(_:from:replies:)``).
    private let deliver: @Sendable (VarlinkReplier, _ message: [UInt8], _ continues: Bool) -> Void
    /// A struct, not a tuple: a tuple (or a bare closure) kept in a generic ``Locked`` is stored at the generic
    /// parameter's abstraction, so every `withLock` would wrap the closure in two more reabstraction thunks on its
    /// way in and out: a monitor's replier, locked once per reply, grew a chain of them (about 120 bytes a reply)
    /// that overflowed the stack when the handler finally ran.
    private struct State {
        var finished = false
        var cancelled = false
        var onCancel: (@Sendable () -> Void)?
    }

    private let state = Locked(State())
    /// The call being answered.
    public let call: VarlinkCall

    init(call: VarlinkCall, deliver: @escaping @Sendable (VarlinkReplier, [UInt8], Bool) -> Void) {
        self.call = call
        self.deliver = deliver
    }

    /// `true` once the client is gone; later replies are dropped.
    public var isCancelled: Bool {
        state.withLock { $0.cancelled }
    }

    /// Runs `handler` once the client is gone (at once if it already is).
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.onCancel = handler
            return false
        }
        if runNow { handler() }
    }

    /// Sends a reply; without `continues` it is the last.
    public func reply(_ parameters: [String: JSONValue], continues: Bool = false) {
        send(VarlinkReply(parameters: parameters, continues: continues && call.more))
    }

    /// Sends a reply whose parameters are already JSON text (an object), so one encoding serves many clients.
    public func reply(encodedParameters: [UInt8], continues: Bool = false) {
        reply(continues: continues, reserving: encodedParameters.count) { $0 += encodedParameters }
    }

    /// Sends the last reply, its parameters (JSON text, an object) appended by `parameters` straight into the
    /// message: a reply of megabytes is not made and then copied into its frame (two of it in memory at once).
    public func reply(writingParameters parameters: (inout [UInt8]) -> Void) {
        reply(continues: false, reserving: 0, writing: parameters)
    }

    /// Sends a reply framed around the parameters `parameters` appends (room reserved for `reserving` bytes of them).
    private func reply(continues: Bool, reserving: Int, writing parameters: (inout [UInt8]) -> Void) {
        let last = !(continues && call.more)
        let accepted = state.withLock { state -> Bool in
            guard !state.finished && !state.cancelled else { return false }
            if last { state.finished = true }
            return true
        }
        guard accepted else { return }
        var message: [UInt8] = []
        message.reserveCapacity(reserving + Self.continuing.count + 2)
        Self.frame(last: last, into: &message, parameters)
        deliver(self, message, !last)
    }

    /// Sends several replies of a `more` call that all continue, parameters already JSON text, as one delivery: a
    /// connection writes them with one `send`. A monitor that falls behind a burst gets what piled up at once, not
    /// one write per change. Without `more` only the first is sent, and it is the last.
    public func reply(continuingWith encodedParameters: [[UInt8]]) {
        reply(continuingWith: ContinuingReplies(encodedParameters: encodedParameters))
    }

    /// Sends replies framed beforehand (``ContinuingReplies``) as one delivery, the same buffer for every call they
    /// answer. Without `more` only the first is sent, and it is the last.
    public func reply(continuingWith replies: ContinuingReplies) {
        guard let first = replies.firstParameters else { return }
        guard call.more else { return reply(encodedParameters: Array(first), continues: true) }
        let accepted = state.withLock { state in !state.finished && !state.cancelled }
        guard accepted else { return }
        deliver(self, replies.message, true)
    }

    fileprivate static let continuing = Array(#"{"continues":true,"parameters":"#.utf8)
    private static let final = Array(#"{"parameters":"#.utf8)

    /// Appends one reply, its parameters (JSON text) appended by `parameters`, as Varlink frames it: the object, then
    /// a NUL.
    fileprivate static func frame(last: Bool, into message: inout [UInt8], _ parameters: (inout [UInt8]) -> Void) {
        message += last ? final : continuing
        parameters(&message)
        message += [UInt8(ascii: "}"), 0]
    }

    /// Sends an error, which is always the last reply.
    public func error(_ name: String, _ parameters: [String: JSONValue] = [:]) {
        send(VarlinkReply(parameters: parameters, error: name))
    }

    private func send(_ reply: VarlinkReply) {
        let accepted = state.withLock { state -> Bool in
            guard !state.finished && !state.cancelled else { return false }
            if !reply.continues { state.finished = true }
            return true
        }
        guard accepted else { return }
        // Parameters of JSON values always encode (no floats that JSON lacks reach a JSONValue); were one ever not
        // to, nothing is sent but the call still ends, so the connection goes on with the next.
        deliver(self, (try? VarlinkFraming.encode(reply)) ?? [], reply.continues)
    }

    func cancel() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            defer { state.onCancel = nil }
            return state.onCancel
        }
        handler?()
    }
}

/// Replies of `more` calls that all continue, framed once however many calls they answer: a monitor's batch of changes
/// goes to ten clients as one buffer, which a connection with nothing else queued takes without a copy, rather than
/// being framed and copied for each. Contract: each reply's parameters are one JSON object, written by the caller;
/// ``message`` is the replies as Varlink frames them, in the order appended.
public struct ContinuingReplies: Sendable {
    /// Where a reply's frame starts in ``message``, and where its parameters are.
    private struct Frame: Sendable {
        var start: Int
        var parameters: Range<Int>
    }

    /// The replies, framed, one after another.
    public private(set) var message: [UInt8] = []
    private var frames: [Frame] = []

    /// No replies yet, with room for `capacity` bytes of them.
    public init(reservingCapacity capacity: Int = 0) {
        message.reserveCapacity(capacity)
    }

    /// The replies with these parameters (JSON text, an object each).
    public init(encodedParameters: [[UInt8]]) {
        self.init(
            reservingCapacity: encodedParameters.reduce(0) { $0 + $1.count + VarlinkReplier.continuing.count + 2 })
        for parameters in encodedParameters { append { $0 += parameters } }
    }

    /// How many replies there are.
    public var count: Int { frames.count }

    /// The first reply's parameters, if there is one.
    var firstParameters: ArraySlice<UInt8>? { frames.first.map { message[$0.parameters] } }

    /// Appends a reply whose parameters (JSON text, an object) `parameters` appends straight into the message.
    public mutating func append(writing parameters: (inout [UInt8]) -> Void) {
        let start = message.count
        var range = start..<start
        VarlinkReplier.frame(last: false, into: &message) { message in
            let from = message.count
            parameters(&message)
            range = from..<message.count
        }
        frames.append(Frame(start: start, parameters: range))
    }

    /// The replies after the first `k`: for a client whose first reply already held those.
    public func dropFirst(_ k: Int) -> ContinuingReplies {
        guard k > 0 else { return self }
        var rest = ContinuingReplies()
        guard k < frames.count else { return rest }
        let base = frames[k].start
        rest.message = Array(message[base...])
        rest.frames = frames[k...].map { frame in
            Frame(
                start: frame.start - base,
                parameters: (frame.parameters.lowerBound - base)..<(frame.parameters.upperBound - base))
        }
        return rest
    }
}
