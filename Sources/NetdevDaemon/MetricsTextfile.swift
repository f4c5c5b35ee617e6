import Dispatch
import Locking
public import MobiusCore
public import NetdevSession

#if canImport(Glibc)
import Glibc
#endif

/// `[Metrics] TextfileDirectory=`: `netdevd.prom` in that directory, for node_exporter's textfile collector, written
/// whole under a temporary name and renamed over the old one (a reader sees the old file or the new, never part of
/// one), readable by all (node_exporter runs as its own user).
///
/// Written when something changed (the model's change sequence, a hook's counts), at most once a second: a burst
/// of changes is one write, the next a second after it. Nothing is rendered or scheduled while the directory is
/// unset, and an idle netdevd writes nothing. A write that fails is logged once per distinct reason (and once when
/// writing works again); netdevd goes on. A directory changed by a reload takes the file along (the old one is
/// removed), and a stop removes it, so node_exporter never reports a stopped netdevd's last state as current.
///
/// Its state is behind a ``Locked``; writes happen on a serial queue of its own.
public final class MetricsTextfile: Sendable {
    /// The file's name in the directory.
    public static let fileName = "netdevd.prom"

    private struct State {
        var directory: String?
        var latest: Model?
        var sequence = -1
        /// A write is queued.
        var scheduled = false
        /// When the last write started (monotonic nanoseconds).
        var lastWrite: UInt64?
        /// The file written last, to remove on a stop or a change of directory.
        var written: String?
        /// The reason of the failure logged last; `nil` while writes succeed.
        var failing: String?
        var stopped = false
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "netdevd.metrics")
    private let exporter: MetricsExporter
    private let clients: @Sendable () -> Int
    private let log: @Sendable (Int, String) -> Void
    private let intervalNanoseconds: UInt64

    /// A writer of `exporter`'s text; `clients` counts the open control connections; `log` takes a priority and a
    /// message for the journal.
    public init(
        exporter: MetricsExporter, clients: @escaping @Sendable () -> Int,
        intervalNanoseconds: UInt64 = 1_000_000_000, log: @escaping @Sendable (Int, String) -> Void
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
    /// for it; removes the file from a directory a reload left.
    public func accept(_ model: Model) {
        let directory = model.configuration.metricsTextfileDirectory
        let stale = state.withLock { state -> String? in
            guard !state.stopped, directory != nil || state.directory != nil else { return nil }
            guard model.changeSequence != state.sequence || directory != state.directory else { return nil }
            state.sequence = model.changeSequence
            var stale: String?
            if directory != state.directory {
                stale = state.written
                state.written = nil
                state.directory = directory
            }
            state.latest = directory == nil ? nil : model
            if directory != nil { schedule(&state) }
            return stale
        }
        if let stale { Self.remove(stale) }
    }

    /// Writes again soon: a count the model does not show changed.
    public func poke() {
        state.withLock { state in
            guard state.latest != nil, !state.stopped else { return }
            schedule(&state)
        }
    }

    /// Queues a write unless one is queued: now, or a second after the last one began.
    private func schedule(_ state: inout State) {
        guard !state.scheduled else { return }
        state.scheduled = true
        let now = Self.monotonicNanoseconds()
        let delay = state.lastWrite.map { last in
            last + intervalNanoseconds > now ? last + intervalNanoseconds - now : 0
        }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay ?? 0))) { [weak self] in self?.write() }
    }

    private func write() {
        let job = state.withLock { state -> (Model, String)? in
            state.scheduled = false
            guard !state.stopped, let model = state.latest, let directory = state.directory else { return nil }
            state.lastWrite = Self.monotonicNanoseconds()
            return (model, directory)
        }
        guard let (model, directory) = job else { return }
        let bytes = exporter.render(model, clients: clients())
        let path = directory + "/" + Self.fileName
        let problem = Self.replace(path, with: bytes)
        let notice = state.withLock { state -> (Int, String)? in
            guard state.directory == directory, !state.stopped else {
                // Stopped or moved while writing: the file just written is not wanted.
                if problem == nil { Self.remove(path) }
                return nil
            }
            if let problem {
                defer { state.failing = problem }
                return state.failing == problem ? nil : (4, "Cannot write the metrics file \(path): \(problem)")
            }
            state.written = path
            defer { state.failing = nil }
            return state.failing == nil ? nil : (5, "The metrics file \(path) is written again")
        }
        if let notice { log(notice.0, notice.1) }
    }

    /// Removes the file written last; later models write none.
    public func stop() {
        let written = state.withLock { state -> String? in
            state.stopped = true
            defer { state.written = nil }
            return state.written
        }
        queue.sync {}
        if let written { Self.remove(written) }
    }

    private static func remove(_ path: String) {
        unlink(path)
    }

    /// Writes `bytes` to a temporary file beside `path` (mode 0644) and renames it to `path`; what went wrong, in
    /// words an operator can act on, or `nil`.
    static func replace(_ path: String, with bytes: [UInt8]) -> String? {
        let temporary = Daemon.directory(of: path) + "/.netdevd.prom.tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { return explain(errno, creating: temporary) }
        var problem: String?
        // fchmod: the mode of a file left by an earlier run, and whatever the umask took away.
        if fchmod(fd, 0o644) != 0 { problem = explain(errno, creating: temporary) }
        var offset = 0
        while problem == nil && offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                problem = explain(errno, creating: temporary)
            } else {
                offset += written
            }
        }
        if close(fd) != 0 && problem == nil { problem = explain(errno, creating: temporary) }
        if problem == nil && rename(temporary, path) != 0 { problem = explain(errno, creating: path) }
        if problem != nil { unlink(temporary) }
        return problem
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

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
