import Dispatch
import NetdevSession

#if canImport(Glibc)
import Glibc
#endif

/// Follows systemd-networkd's per-link state files (`/run/systemd/netif/links/<index>`, `ADMIN_STATE=`) for the
/// networkd-dispatcher compatibility, by inotify: nothing is polled. While the directory does not exist, its nearest
/// existing parent is watched for it to appear.
///
/// Reports ``Event/networkdStatesRead(running:administrative:)`` when it starts and whenever the directory appears or
/// goes (or inotify lost events), and ``Event/networkdStateChanged(index:administrative:)`` for each file networkd
/// writes (it renames a new file into place) or removes.
///
/// `@unchecked Sendable`: every property is read and written only on `queue`.
final class NetworkdStateWatcher: @unchecked Sendable {
    /// networkd's directory of link state files.
    static let defaultDirectory = "/run/systemd/netif/links"

    private let directory: String
    private let queue: DispatchQueue
    private let send: @Sendable (Event) -> Void
    private let problem: SourceProblem
    private var inotify: Int32 = -1
    private var token: UInt64?
    /// The watch on the directory, or on the parent it is awaited in.
    private var links: Int32?
    private var parent: Int32?

    init(
        directory: String = defaultDirectory, queue: DispatchQueue, problem: @escaping SourceProblem,
        send: @escaping @Sendable (Event) -> Void
    ) {
        self.directory = directory
        self.queue = queue
        self.problem = problem
        self.send = send
    }

    /// Starts watching (again) and reports every file's state. On queue.
    func start() {
        guard inotify < 0 else { return }
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else {
            return problem(
                "cannot watch \(directory) (inotify: \(String(cString: strerror(errno)))): networkd-dispatcher scripts "
                    + "are told the administrative state unmanaged")
        }
        token = Poller.shared?.register(inotify, queue: queue) { [weak self] in self?.readable() }
        if token == nil {
            problem("cannot watch \(directory): no poller; networkd-dispatcher scripts are told unmanaged")
        }
        rewatch()
    }

    /// Stops watching. On queue.
    func stop() {
        if let token { Poller.shared?.unregister(token) }
        token = nil
        if inotify >= 0 { close(inotify) }
        inotify = -1
        links = nil
        parent = nil
    }

    /// Watches the directory if it exists, else its nearest existing parent; then reports every file.
    private func rewatch() {
        if let parent { _ = inotify_rm_watch(inotify, parent) }
        parent = nil
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF)
        let watch = inotify_add_watch(inotify, directory, mask | UInt32(IN_ONLYDIR))
        if watch >= 0 {
            links = watch
        } else {
            links = nil
            var path = directory
            while parent == nil && path != "/" && !path.isEmpty {
                path = Paths.directory(of: path)
                let watch = inotify_add_watch(inotify, path, UInt32(IN_CREATE | IN_MOVED_TO | IN_ONLYDIR))
                if watch >= 0 { parent = watch }
            }
        }
        var states: [Int32: String] = [:]
        if links != nil, let stream = opendir(directory) {
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if let index = Self.index(name), let state = administrativeState(of: name) { states[index] = state }
            }
            closedir(stream)
        }
        send(.networkdStatesRead(running: links != nil, administrative: states))
    }

    private func readable() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var events: [DeviceEventSource.InotifyEvent] = []
        while inotify >= 0 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(inotify, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            events += DeviceEventSource.inotifyEvents(buffer[0..<count])
        }
        // An event without a name is inotify's own (an overflow, or the directory's watch ended); one in the
        // parent may be the directory appearing: read everything again.
        if events.contains(where: { $0.name.isEmpty || $0.watch == parent }) {
            return rewatch()
        }
        var seen = Set<String>()
        for event in events where event.watch == links && seen.insert(event.name).inserted {
            guard let index = Self.index(event.name) else { continue }
            send(.networkdStateChanged(index: index, administrative: administrativeState(of: event.name)))
        }
    }

    /// A state file's name is its link's index.
    private static func index(_ name: String) -> Int32? {
        guard !name.isEmpty, name.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int32(name)
    }

    /// `ADMIN_STATE=` of the file `name`, or `nil` when it is gone or says none.
    private func administrativeState(of name: String) -> String? {
        let fd = open(directory + "/" + name, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[0..<count], as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("ADMIN_STATE=") {
            let value = line.dropFirst("ADMIN_STATE=".count)
            return value.isEmpty ? nil : String(value)
        }
        return nil
    }
}
