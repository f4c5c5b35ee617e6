internal import CLinux
import Dispatch
import Locking
public import MobiusCore
public import NetdevSession
public import Syslog

#if canImport(Glibc)
import Glibc
#endif

/// `[Metrics] TextfileDirectory=`: `netdevd.prom` in that directory, for node_exporter's textfile collector, written
/// whole under a temporary name and renamed over the old one (a reader sees the old file or the new, never part of
/// one), readable by all (node_exporter runs as its own user).
///
/// Written when something changed (the model's change sequence, a hook's counts), at most once a second: a burst
/// of changes is one write, the next a second after it ended (so files are renamed into place a second apart even
/// when a render on a large host takes a large part of a second; counts that change with every event, such as the
/// events taken, are as of the last write). Nothing is rendered or scheduled while the directory is unset, and an idle
/// netdevd writes nothing. A write that fails is logged once per distinct reason (and once when writing works
/// again) and tried again after 5 s, then less often, up to a minute apart; netdevd goes on. A directory changed
/// by a reload takes the file along (the old one is removed), and a clean stop removes it, so node_exporter does
/// not report a stopped netdevd's last state as current (a netdevd killed outright leaves it, unless systemd
/// removes its runtime directory: `node_textfile_mtime_seconds` shows its age).
///
/// Its state is behind a ``Locked``; writes happen on a serial queue of its own.
public final class MetricsTextfile: Sendable {
    /// The file's name in the directory.
    public static let fileName = "netdevd.prom"

    private struct State {
        var directory: String?
        var latest: Model?
        var sequence = -1
        /// A write is wanted: queued, or to be queued when the one running now ends.
        var scheduled = false
        /// A write is running (on `queue`).
        var writing = false
        /// When the last write started and ended (monotonic nanoseconds).
        var lastStarted: UInt64?
        var lastEnded: UInt64?
        /// The file written last, to remove on a stop or a change of directory.
        var written: String?
        /// The reason of the failure logged last; `nil` while writes succeed.
        var failing: String?
        /// How long until the next try after a failed write (nanoseconds): 5 s, doubling up to a minute.
        var retryNanoseconds: UInt64 = 0
        var stopped = false
        /// Writes tried (including failed ones), for tests.
        var attempts = 0
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "netdevd.metrics")
    private let exporter: MetricsExporter
    private let clients: @Sendable () -> Int
    private let log: @Sendable (LogPriority, String) -> Void
    private let intervalNanoseconds: UInt64

    /// A writer of `exporter`'s text; `clients` counts the open control connections; `log` takes a priority and a
    /// message for the journal.
    public init(
        exporter: MetricsExporter, clients: @escaping @Sendable () -> Int,
        intervalNanoseconds: UInt64 = 1_000_000_000, log: @escaping @Sendable (LogPriority, String) -> Void
    ) {
        self.exporter = exporter
        self.clients = clients
        self.intervalNanoseconds = intervalNanoseconds
        self.log = log
    }

    /// The view to connect to the controller: it takes every model (a comparison when nothing is to be written).
    public var view: AnyConnectable<Model, Event> {
        AnyConnectable { [self] _ in
            Connection(acceptClosure: { [weak self] model in self?.accept(model) }, disposeClosure: {})
        }
    }

    /// What the view does with each model: notes a change (a new change sequence or directory) and queues a write
    /// for it; removes the file from a directory a reload left. Models from before the first enumeration finished
    /// (no links yet, so "offline") are not written.
    public func accept(_ model: Model) {
        guard model.phase != .starting && model.phase != .enumerating else { return }
        let directory = model.configuration.metricsTextfileDirectory
        state.withLock { state in
            guard !state.stopped, directory != nil || state.directory != nil else { return }
            guard model.changeSequence != state.sequence || directory != state.directory else { return }
            state.sequence = model.changeSequence
            if directory != state.directory {
                // On the writes' queue, so it cannot overtake a write to the new directory (the same directory
                // under another name, say).
                if let stale = state.written { queue.async { [self] in remove(stale) } }
                state.written = nil
                state.failing = nil
                state.retryNanoseconds = 0
                state.directory = directory
            }
            state.latest = directory == nil ? nil : model
            if directory != nil { schedule(&state) }
        }
    }

    /// Writes again soon: a count the model does not show changed.
    public func poke() {
        state.withLock { state in
            guard state.latest != nil, !state.stopped else { return }
            schedule(&state)
        }
    }

    /// Asks for a write unless one is asked for already. While a write runs, its end queues the next; otherwise it
    /// is queued now.
    private func schedule(_ state: inout State) {
        guard !state.scheduled else { return }
        state.scheduled = true
        if !state.writing { queueWrite(state) }
    }

    /// Queues the write asked for: now, or a second after the last one ended (after a failure, when the next try is
    /// due).
    private func queueWrite(_ state: State) {
        let now = PollerTimer.now()
        let wait = max(intervalNanoseconds, state.retryNanoseconds)
        let delay = state.lastEnded.map { last in last + wait > now ? last + wait - now : 0 }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay ?? 0))) { [weak self] in self?.write() }
    }

    private func write() {
        let job = state.withLock { state -> (Model, String)? in
            state.scheduled = false
            guard !state.stopped, let model = state.latest, let directory = state.directory else { return nil }
            state.writing = true
            state.lastStarted = PollerTimer.now()
            state.attempts += 1
            return (model, directory)
        }
        guard let (model, directory) = job else { return }
        let connections = clients()
        let path = directory + "/" + Self.fileName
        // Written as it is rendered, 64 KiB at a time: the buffer stays on the heap and is used again, where 12 MB
        // at 20,000 links was mapped, faulted in page by page and unmapped at every write.
        let problem = Self.replace(path) { put throws(WriteFailure) in
            try exporter.render(model, clients: connections, chunk: 64 * 1024, to: put)
        }
        let notice = state.withLock { state -> (LogPriority, String)? in
            state.writing = false
            state.lastEnded = PollerTimer.now()
            // A model that came while this write ran is written a second after it ended.
            defer { if state.scheduled && !state.stopped { queueWrite(state) } }
            guard state.directory == directory, !state.stopped else {
                // Stopped or moved while writing: the file just written is not wanted.
                return problem == nil ? Self.removal(path).map { (.warning, $0) } : nil
            }
            if let problem {
                // Tried again later without a change (the directory may be created meanwhile), less often each time.
                state.retryNanoseconds = min(max(state.retryNanoseconds * 2, 5_000_000_000), 60_000_000_000)
                state.scheduled = true
                defer { state.failing = problem }
                return state.failing == problem
                    ? nil
                    : (.warning, "Cannot write the metrics file \(path): \(problem); trying again every minute at most")
            }
            state.written = path
            state.retryNanoseconds = 0
            defer { state.failing = nil }
            return state.failing == nil ? nil : (.notice, "The metrics file \(path) is written again")
        }
        if let notice { log(notice.0, notice.1) }
    }

    /// Whether a write is queued (tests check what a model did or did not cause without waiting a second).
    var isWriteQueued: Bool { state.withLock { $0.scheduled } }
    /// When the last write began and ended (monotonic nanoseconds), and how many were tried: for tests.
    var writes: (lastStarted: UInt64?, lastEnded: UInt64?, attempts: Int) {
        state.withLock { ($0.lastStarted, $0.lastEnded, $0.attempts) }
    }
    /// Returns once the write running now (if any) has finished, what it logs included.
    func settle() { queue.sync {} }

    /// Removes the file written last; later models write none.
    public func stop() {
        let written = state.withLock { state -> String? in
            state.stopped = true
            defer { state.written = nil }
            return state.written
        }
        queue.sync {}
        if let written { remove(written) }
    }

    /// Removes a file netdevd wrote; a failure other than its being gone already is logged (the stale file would
    /// go on being read as current).
    private func remove(_ path: String) {
        if let problem = Self.removal(path) { log(.warning, problem) }
    }

    private static func removal(_ path: String) -> String? {
        guard unlink(path) != 0, errno != ENOENT else { return nil }
        return "Cannot remove the metrics file \(path): \(String(cString: strerror(errno))); node_exporter goes on "
            + "reading it as current until it is removed"
    }

    /// Why a write to the temporary file failed, in words an operator can act on.
    struct WriteFailure: Error {
        let problem: String
    }

    /// Writes what `body` hands to the function it is given (which throws when a write fails, and `body` then
    /// stops) to a new temporary file beside `path` (a unique name made with O_EXCL, so no file or link someone
    /// else left there is written through; mode 0644) and renames it to `path`; what went wrong, in words an
    /// operator can act on, or `nil`.
    static func replace(
        _ path: String, writing body: (_ put: ([UInt8]) throws(WriteFailure) -> Void) throws(WriteFailure) -> Void
    ) -> String? {
        // Failures name the template, not the random name: a failure that repeats reads the same, and is said once.
        let named = Paths.directory(of: path) + "/.netdevd.prom.XXXXXX"
        var template = Array(named.utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkostemp($0.baseAddress!, O_CLOEXEC) }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else { return explain(errno, creating: named) }
        var problem: String?
        // mkostemp makes it 0600; node_exporter runs as a user of its own.
        if fchmod(fd, 0o644) != 0 { problem = explain(errno, creating: named) }
        if problem == nil {
            do {
                try body { bytes throws(WriteFailure) in
                    if let failure = writeAll(bytes, to: fd, named: named) { throw WriteFailure(problem: failure) }
                }
            } catch {
                problem = error.problem
            }
        }
        if close(fd) != 0 && problem == nil { problem = explain(errno, creating: named) }
        if problem == nil && rename(temporary, path) != 0 { problem = explain(errno, creating: path) }
        if problem != nil { unlink(temporary) }
        return problem
    }

    /// Writes all of `bytes` to `fd`; what went wrong, or `nil`.
    private static func writeAll(_ bytes: [UInt8], to fd: Int32, named: String) -> String? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return explain(errno, creating: named)
            }
            if written == 0 { return "the file system took no bytes (\(named))" }
            offset += written
        }
        return nil
    }

    private static func explain(_ error: Int32, creating path: String) -> String {
        let reason = String(cString: strerror(error))
        switch error {
        case EROFS, EACCES, EPERM:
            return "\(reason) (\(path)). Under systemd, netdevd's sandbox lets it write only where its unit allows: "
                + "/usr/share/doc/netdevd/examples/metrics has a drop-in giving it /run/netdevd-metrics"
        case ENOENT:
            return "\(reason) (\(path)): the directory does not exist; create it (node_exporter's package does: "
                + "/var/lib/prometheus/node-exporter)"
        default:
            return "\(reason) (\(path))"
        }
    }
}
