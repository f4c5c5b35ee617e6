internal import CLinux
import Dispatch
import Locking
import NetdevSession
import NetdevWire
import Syslog
public import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// How the hook runner is started (`netdevd --serve-hooks`).
public struct HookRunnerOptions: Sendable {
    /// The hook directories, highest priority first: the only places a hook it starts may come from.
    public var hookDirectories = ["/etc/netdevd/hooks.d", "/usr/lib/netdevd/hooks.d"]
    /// netdevd's configuration, for `[Hooks] User=` and `Group=`.
    public var configurationFile = "/etc/netdevd/netdevd.conf"
    /// With a listening socket from systemd: the unit a peer must run in (`netdevd.service`); `nil` accepts a
    /// peer of the runner's own uid only.
    public var peerUnit: String?
    /// Where log entries go; `nil` chooses.
    public var logTarget: JournalTarget?

    /// The defaults.
    public init() {}
}

/// The hook runner: the process that starts netdevd's hooks, apart from netdevd and without its sandbox. It serves
/// one netdevd at a time, on its standard input (a socket pair netdevd made: the runner as netdevd's child) or on
/// a listening socket from systemd (`netdevd-hooks.socket`), and exits when that netdevd's connection ends and its
/// hooks have ended. It reads no kernel message and no client request: only netdevd's requests, checked as
/// untrusted (``HookRunnerService``). A peer that is not netdevd is refused, with a journal entry.
public final class HookRunnerProgram: Sendable {
    private let options: HookRunnerOptions
    private let journal: Journal
    private let logQueue = DispatchQueue(label: "netdevd-hooks.journal")
    private let queue = DispatchQueue(label: "netdevd-hooks")
    /// The connection served now.
    private let service = Locked<HookRunnerService?>(nil)

    /// A runner with `options`; nothing starts until ``run()``.
    public init(options: HookRunnerOptions) {
        self.options = options
        self.journal = Journal(identifier: "netdevd-hooks", target: options.logTarget)
    }

    /// Serves until netdevd's connection ends (exit status 0), or returns 1 when there is nothing to serve.
    public func run() -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        // Resolved when a connection starts, and again before a hook while they cannot be.
        let credentials: @Sendable () -> Result<HookCredentials?, HookCredentialsProblem> = { [self] in
            resolveCredentials()
        }
        let listening = ListenFDs.take()
        if let socket = listening.first {
            guard listen(socket: socket.fileDescriptor, credentials: credentials) else { return 1 }
        } else {
            let connection = HookSocket(descriptor: STDIN_FILENO)
            var type: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(STDIN_FILENO, SOL_SOCKET, SO_TYPE, &type, &length) == 0,
                type == Int32(SOCK_SEQPACKET.rawValue)
            else {
                log(
                    .error,
                    "netdevd --serve-hooks serves a connection on its standard input (a SOCK_SEQPACKET socket) or a "
                        + "listening socket from systemd, and has neither")
                return 1
            }
            // The socket pair's other end is netdevd's, which started this runner.
            guard let peer = connection.peer(), peer.pid == getppid() else {
                log(
                    .error,
                    "Refused a connection on standard input: its peer is not the process that started the runner")
                return 1
            }
            guard queue.sync(execute: { serve(connection, credentials: credentials) }) else { return 1 }
        }
        // SIGTERM (systemd stopping the runner): the hooks get theirs, and the runner exits when they are gone.
        Glibc.signal(SIGTERM, SIG_IGN)
        let terminate = DispatchSource.makeSignalSource(signal: SIGTERM, queue: queue)
        terminate.setEventHandler { [self] in
            guard let current = service.withLock({ $0 }) else { exit(0) }
            current.stop()
        }
        terminate.resume()
        dispatchMain()
    }

    private func resolveCredentials() -> Result<HookCredentials?, HookCredentialsProblem> {
        switch ConfigurationLoader(mainFile: options.configurationFile).load() {
        case .loaded(let configuration, _):
            return HookCredentials.resolve(user: configuration.hookUser, group: configuration.hookGroup)
        case .rejected(let errors):
            return .failure(
                HookCredentialsProblem(
                    "the configuration cannot be read (\(errors.map(\.description).joined(separator: "; ")))"))
        }
    }

    /// Accepts connections on `socket` until one from netdevd is served; from then on the socket is not watched:
    /// a later connection (a netdevd restarted while this runner's hooks end) waits in the backlog, and systemd
    /// starts a new runner for it once this one has exited.
    private func listen(
        socket listening: Int32, credentials: @escaping @Sendable () -> Result<HookCredentials?, HookCredentialsProblem>
    ) -> Bool {
        let flags = fcntl(listening, F_GETFL)
        _ = fcntl(listening, F_SETFL, flags | O_NONBLOCK)
        let registration = Locked<UInt64?>(nil)
        let token = Poller.shared?.register(listening, queue: queue) { [self] in
            while true {
                let descriptor = accept4(listening, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                guard descriptor >= 0 else { return }
                let connection = HookSocket(descriptor: descriptor)
                if let refusal = refusal(of: connection) {
                    log(.warning, "Refused a connection to the hook runner: \(refusal)")
                    connection.close()
                    continue
                }
                if serve(connection, credentials: credentials), let token = registration.withLock({ $0 }) {
                    Poller.shared?.unregister(token)
                    return
                }
            }
        }
        registration.withLock { $0 = token }
        if token == nil { log(.error, "The hook runner cannot watch its listening socket") }
        return token != nil
    }

    /// Why a connection's peer may not use the runner, or `nil` when it is netdevd: with ``HookRunnerOptions/peerUnit``,
    /// a process whose cgroup is exactly that unit's beside the runner's own (`/system.slice/netdevd.service` for a
    /// runner in `/system.slice/netdevd-hooks.service`; a user's unit of the same name elsewhere is not netdevd);
    /// without, a process of the runner's uid.
    private func refusal(of connection: HookSocket) -> String? {
        guard let peer = connection.peer() else { return "the kernel does not say who the peer is" }
        guard let unit = options.peerUnit else {
            return peer.uid == geteuid()
                ? nil : "its peer (pid \(peer.pid), uid \(peer.uid)) is not of uid \(geteuid())"
        }
        guard let own = Self.cgroup(of: "self"), let slash = own.lastIndex(of: "/") else {
            return "the runner cannot read its own cgroup"
        }
        let expected = String(own[..<slash]) + "/" + unit
        let found = Self.cgroup(of: String(peer.pid))
        guard found == expected else {
            return
                "its peer (pid \(peer.pid), uid \(peer.uid)) runs in \(found ?? "an unknown cgroup"), not \(expected)"
        }
        return nil
    }

    /// The cgroup (v2) path of process `pid` (`self` for the runner).
    private static func cgroup(of pid: String) -> String? {
        guard case .success(let bytes) = TextFile.bytes(at: "/proc/\(pid)/cgroup", limit: 4096) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("0::") }
            .map { String($0.dropFirst(3)) }
    }

    /// Serves `connection` until it ends. On queue.
    private func serve(
        _ connection: HookSocket,
        credentials: @escaping @Sendable () -> Result<HookCredentials?, HookCredentialsProblem>
    ) -> Bool {
        let served = HookRunnerService(
            socket: connection, directories: options.hookDirectories, credentials: credentials,
            dispatcherDirectories: { [options] in
                guard
                    case .loaded(let configuration, _) = ConfigurationLoader(mainFile: options.configurationFile).load()
                else { return [] }
                return configuration.networkdDispatcherDirectories
            }, queue: queue,
            log: { [self] entry in logQueue.async { [self] in write(entry) } },
            ended: { [self] in logQueue.async { exit(0) } })
        service.withLock { $0 = served }
        guard served.start() else {
            log(.error, "The hook runner cannot watch its connection with netdevd")
            return false
        }
        return true
    }

    private func log(_ priority: LogPriority, _ message: String) {
        let entry = JournalEntry(message: message, priority: priority)
        logQueue.async { [self] in write(entry) }
    }

    private func write(_ entry: JournalEntry) {
        do throws(JournalError) {
            try journal.send(entry)
        } catch {
            writeToStandardError("netdevd-hooks: \(entry.value(of: .message) ?? "")\n")
        }
    }
}
