import Dispatch
import Locking
import SystemSupport

#if canImport(Glibc)
import Glibc
#endif

/// One client connection. `@unchecked Sendable`: every stored property is read and written only on the server's
/// serial queue (`queue`), where all its methods run.
final class Connection: @unchecked Sendable {
    /// Who connected (read once, at accept).
    let peer: VarlinkPeer
    private let fd: Int32
    private weak var server: VarlinkServer?
    private let queue: DispatchQueue
    private let limits: VarlinkLimits
    /// The error a client that leaves too many replies unread is told.
    private let clientTooSlow: String
    private var framing: VarlinkFraming
    private var output = OutputBuffer()
    /// Something was written since `output` was last found empty after a write.
    private var wroteSinceEmpty = false
    private var readSource: DispatchSourceHandle?
    private var writeSource: (any DispatchSourceWrite)?
    private var isClosed = false
    /// Dispatch sources on `fd` whose cancellation has not completed. The descriptor is closed only when this is
    /// zero: closing it earlier lets a new connection reuse the number while libdispatch still watches the old one,
    /// and the new connection's reads are never delivered.
    private var liveSources = 0
    private var closeWhenFlushed = false
    /// The client was told it is too slow (``VarlinkOverloadErrors/clientTooSlow``); the connection closes once
    /// that is written.
    private var toldTooSlow = false
    /// The client shut down its side: answer what it sent, then close.
    private var peerFinished = false
    /// Calls read and not yet started, as the bytes that came (decoded when started, so what waits costs its size).
    private var waiting: [[UInt8]] = []
    /// The bytes in `waiting`.
    private var waitingBytes = 0
    /// Since when replies have been waiting for the client to read them with none read (monotonic ns), or `nil`.
    private var outputStalledSince: UInt64?
    private var current: VarlinkReplier?
    /// Reading stopped because ``VarlinkLimits/maximumPendingCalls`` calls wait (the read source is suspended).
    private var readPaused = false
    /// When the connection last read a call or finished one (monotonic nanoseconds).
    private var lastActivity = Connection.monotonicNanoseconds()

    init(fd: Int32, peer: VarlinkPeer, server: VarlinkServer, queue: DispatchQueue, limits: VarlinkLimits) {
        clientTooSlow = server.overloadErrors.clientTooSlow
        self.peer = peer
        self.fd = fd
        self.server = server
        self.queue = queue
        self.limits = limits
        self.framing = VarlinkFraming(maximumMessageBytes: limits.maximumMessageBytes)
    }

    /// The time it has been idle since (no call in progress or waiting, nothing left to send), or `nil` while busy.
    var idleSince: UInt64? {
        current == nil && waiting.isEmpty && output.isEmpty && !isClosed ? lastActivity : nil
    }

    /// Cuts the connection off as too slow if its client has read none of its replies for `limit` nanoseconds (a
    /// client that stops reading would otherwise hold its buffer for good). Told so, a connection that still holds
    /// more than ``toldRemainderBytes`` of a reply begun (a large reply read in part) is closed if its client reads
    /// nothing for as long again; one holding less stays until its client reads the error or leaves, so a client
    /// stopped for minutes still learns why the changes stopped. On the queue.
    func closeIfStalled(now: UInt64, limit: UInt64, limitText: String) {
        guard let since = outputStalledSince, !isClosed, now >= since, now - since >= limit else { return }
        if toldTooSlow {
            guard output.count > Self.toldRemainderBytes else { return }
            server?.say(
                .info, kind: "stalled-after-told",
                "Closed the control connection of \(peer): it read nothing for \(limitText) after it was told "
                    + "\(clientTooSlow), with \(output.count) bytes of a reply left")
            close()
        } else {
            cutOffTooSlow(kind: "stalled", because: "read none of its replies for \(limitText)")
        }
    }

    /// What a connection told it is too slow may keep waiting for its client for as long as that takes: the error
    /// and the end of a small reply. A monitor's replies are its changes, each far smaller.
    static let toldRemainderBytes = 64 * 1024

    /// Tells the client it was too slow, after the reply it has begun to read (if any), and closes the connection
    /// once that is written: the replies it has not begun are dropped (their memory goes at once), its call is
    /// cancelled and nothing more is read (a client that leaves is seen when its socket turns writable with an
    /// error). See ``closeIfStalled(now:limit:limitText:)`` for one that never reads again.
    private func cutOffTooSlow(kind: String, because reason: String) {
        toldTooSlow = true
        output.dropUnbegunMessages()
        // Dropping is right: an error name without parameters cannot fail to encode, and the close says the rest.
        output.append((try? VarlinkFraming.encode(VarlinkReply(parameters: [:], error: clientTooSlow))) ?? [])
        outputStalledSince = Self.monotonicNanoseconds()
        closeWhenFlushed = true
        stopReadingAndCalls()
        // Said once its call is cancelled: whoever reads the line finds the call ended.
        server?.say(.warning, kind: kind, "Closed the control connection of \(peer): it \(reason) (\(clientTooSlow))")
        flush()
    }

    /// Reads nothing more and drops the calls: the one in progress is cancelled, those waiting forgotten.
    private func stopReadingAndCalls() {
        // A suspended source must be resumed to be cancelled (and released) at all.
        if readPaused {
            readPaused = false
            readSource?.resume()
        }
        readSource?.cancel()
        current?.cancel()
        current = nil
        waiting = []
        waitingBytes = 0
    }

    /// Closes the connection if the client has gone while reading is paused (its end-of-file is not read then, and
    /// a call in progress, such as a Monitor, would otherwise keep the connection forever). On the queue.
    func closeIfPeerGone() {
        guard readPaused, !isClosed else { return }
        // POLLHUP: both directions are shut down, which on AF_UNIX is the peer's close (a client that only shut down
        // its writing side still gets its answers). Reported whatever the events asked for.
        var status = pollfd(fd: fd, events: 0, revents: 0)
        guard poll(&status, 1, 0) == 1, status.revents & Int16(POLLHUP | POLLERR) != 0 else { return }
        close()
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    func start() {
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.readAvailable() }
        watch(source)
        source.resume()
        readSource = DispatchSourceHandle(source)
    }

    private func readAvailable() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !isClosed && !readPaused {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 {
                peerFinished = true
                readSource?.cancel()
                closeIfDone()
                return
            }
            if count < 0 {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { close() }
                return
            }
            lastActivity = Self.monotonicNanoseconds()
            let messages: [[UInt8]]
            do {
                messages = try framing.append(chunk[0..<count])
            } catch {
                cutOff(kind: "too-long", because: "sent a message longer than \(limits.maximumMessageBytes) bytes")
                return
            }
            for message in messages {
                waiting.append(message)
                waitingBytes += message.count
            }
            startNextCall()
            if !isClosed && !readPaused && mustPause {
                // Not an offence (Varlink allows pipelining), but nothing more is read until replies are taken: the
                // client's own send blocks, and what it queued costs the server nothing.
                readPaused = true
                readSource?.suspend()
            }
        }
    }

    /// Closes the connection and says why, naming the peer.
    func cutOff(kind: String, because reason: String) {
        // Said first: whoever sees the connection gone (its client, the server's count) can then read why. Closed
        // first, a test read the messages in between once.
        server?.say(.warning, kind: kind, "Closed the control connection of \(peer): it \(reason)")
        close()
    }

    /// Whether as many calls, or as many bytes of them, wait as one connection may leave waiting.
    private var mustPause: Bool {
        waiting.count >= limits.maximumPendingCalls || waitingBytes >= limits.maximumMessageBytes
    }

    private func startNextCall() {
        guard current == nil, !waiting.isEmpty, !isClosed, let server else { return }
        let message = waiting.removeFirst()
        waitingBytes -= message.count
        if readPaused && !mustPause {
            readPaused = false
            readSource?.resume()
        }
        let call: VarlinkCall
        switch VarlinkCall.decode(message) {
        case .success(let decoded): call = decoded
        case .failure(let problem):
            cutOff(kind: "not-a-call", because: "sent a message that is not a Varlink call (\(problem))")
            return
        }
        let replier = VarlinkReplier(call: call) { [weak self, queue] replier, message, continues in
            queue.async { [weak self] in self?.send(encoded: message, continues: continues, for: replier) }
        }
        current = replier
        server.dispatch(call, peer: peer, replier: replier)
    }

    func send(encoded message: [UInt8], continues: Bool, for replier: VarlinkReplier) {
        guard !isClosed, replier === current else { return }
        if !replier.call.oneway {
            if output.count > limits.maximumPendingOutputBytes {
                cutOffTooSlow(
                    kind: "slow", because: "left more than \(limits.maximumPendingOutputBytes) bytes of replies unread")
                return
            }
            output.append(message)
            flush()
        }
        if !continues {
            current = nil
            lastActivity = Self.monotonicNanoseconds()
            startNextCall()
            closeIfDone()
        }
    }

    private func closeIfDone() {
        if peerFinished && current == nil && waiting.isEmpty {
            closeWhenFlushed = true
            flush()
        }
    }

    private func flush() {
        let before = output.count
        defer {
            if output.isEmpty {
                outputStalledSince = nil
            } else if output.count < before || outputStalledSince == nil {
                outputStalledSince = Self.monotonicNanoseconds()
            }
        }
        while !output.isEmpty && !isClosed {
            let written = output.write { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                wroteSinceEmpty = true
                continue
            }
            if written < 0 && errno == EINTR { continue }
            if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                waitForWritable()
                return
            }
            close()
            return
        }
        if output.isEmpty {
            if wroteSinceEmpty { server?.drained() }
            wroteSinceEmpty = false
        }
        if output.isEmpty && closeWhenFlushed {
            close()
        }
    }

    private func waitForWritable() {
        guard writeSource == nil else { return }
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in
            guard let self else { return }
            self.writeSource?.cancel()
            self.writeSource = nil
            self.flush()
        }
        writeSource = source
        watch(source)
        source.resume()
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        stopReadingAndCalls()
        writeSource?.cancel()
        writeSource = nil
        if liveSources == 0 { Glibc.close(fd) }
        server?.closed(self)
    }

    /// Counts `source` as live until its cancellation completes (on `queue`), then closes `fd` if the connection is
    /// closed and no other source watches it.
    private func watch(_ source: any DispatchSourceProtocol) {
        liveSources += 1
        source.setCancelHandler { [self] in
            liveSources -= 1
            if isClosed && liveSources == 0 { Glibc.close(fd) }
        }
    }
}
