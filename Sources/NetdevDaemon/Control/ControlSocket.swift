import Syslog
import Systemd
import Varlink

/// The control socket: `io.netdevd` served on the socket systemd passed (socket activation) or on a path of
/// netdevd's own. A socket that cannot be made is said and netdevd goes on without one.
enum ControlSocket {
    /// Serves `control` with `options`' socket path and limits; `say` reports how it is served, `notify` what its
    /// clients did. `nil` when there is no socket.
    /// `drained` hears of each client's replies written out, all it had.
    static func serve(
        _ control: ControlService, options: DaemonOptions, say: (LogPriority, String) -> Void,
        drained: @escaping @Sendable () -> Void, notify: @escaping @Sendable (VarlinkNotice) -> Void
    ) -> VarlinkServer? {
        let listening: Int32
        if let passed = ListenFDs.take().first {
            listening = passed.fileDescriptor
            say(.info, "Serving io.netdevd on the socket systemd passed (\(passed.name))")
        } else {
            let directory = Paths.directory(of: options.socketPath)
            if let problem = Paths.makeDirectories(directory) {
                say(.warning, "No control socket, netdevctl cannot reach this netdevd: \(problem)")
                return nil
            }
            do {
                listening = try VarlinkServer.listen(on: options.socketPath)
                say(.info, "Serving io.netdevd on \(options.socketPath)")
            } catch {
                say(.warning, "No control socket, netdevctl cannot reach this netdevd: \(error)")
                return nil
            }
        }
        var limits = VarlinkLimits()
        limits.maximumPendingOutputBytes = options.monitorBufferBytes
        let server = VarlinkServer(
            listening: listening, interfaces: [control.interface], vendor: "netdevd", product: "netdevd",
            version: Daemon.version, url: "", limits: limits,
            overloadErrors: VarlinkOverloadErrors(interface: control.interface.name), drained: drained,
            notify: notify)
        server.start()
        return server
    }
}
