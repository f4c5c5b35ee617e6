import Dispatch
import NetdevSession

#if canImport(Glibc)
import Glibc
#endif

/// Follows systemd-networkd's state (`/run/systemd/netif`) for the networkd-dispatcher compatibility, by inotify:
/// nothing is polled. networkd counts as running once it has written its manager state file (`state`), as
/// networkctl tells; the directories themselves are made at every boot by systemd's tmpfiles, networkd or not.
/// Each link's administrative state is `ADMIN_STATE=` of its file in `links/`. While `/run/systemd/netif` does not
/// exist, its nearest existing parent is watched for it to appear.
///
/// Reports ``Event/networkdStatesRead(running:administrative:)`` when it starts (also when it cannot watch: then
/// networkd is not running, as far as it can tell), whenever networkd's state file or the directories appear or go,
/// and when inotify lost events; and ``Event/networkdStateChanged(index:administrative:)`` for each link file networkd
/// writes (it renames a new file into place) or removes.
///
/// `@unchecked Sendable`: every property is read and written only on `queue`.
final class NetworkdStateWatcher: @unchecked Sendable {
    /// networkd's state directory.
    static let defaultRoot = "/run/systemd/netif"

    private let root: String
    private let queue: DispatchQueue
    private let send: @Sendable (Event) -> Void
    private let problem: SourceProblem
    private var inotify: Int32 = -1
    private var token: UInt64?
    /// The watch on `root`, for `state` and `links` coming and going.
    private var netif: Int32?
    /// The watch on `root/links`, for the link files.
    private var links: Int32?
    /// While `root` does not exist: the watch on its nearest existing parent, and the name awaited there.
    private var parent: (watch: Int32, path: String, child: String)?
    /// What the last report said of networkd running (its `state` file is rewritten at every change of networkd's:
    /// only a change of this is reported again).
    private var reportedRunning: Bool?

    private static let directoryMask = UInt32(
        IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF
            | IN_ONLYDIR)

    init(
        root: String = defaultRoot, queue: DispatchQueue, problem: @escaping SourceProblem,
        send: @escaping @Sendable (Event) -> Void
    ) {
        self.root = root
        self.queue = queue
        self.problem = problem
        self.send = send
    }

    /// Starts watching (again) and reports every link's state. On queue.
    func start() {
        guard inotify < 0 else { return }
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else {
            problem(
                "Cannot watch \(root) (inotify: \(String(cString: strerror(errno)))): networkd-dispatcher scripts are "
                    + "told the administrative state unmanaged")
            return send(.networkdStatesRead(running: false, administrative: [:]))
        }
        token = Poller.shared?.register(inotify, queue: queue) { [weak self] in self?.readable() }
        if token == nil {
            problem("Cannot watch \(root): no poller; networkd-dispatcher scripts are told unmanaged")
        }
        rewatch()
    }

    /// Stops watching. On queue.
    func stop() {
        if let token { Poller.shared?.unregister(token) }
        token = nil
        if inotify >= 0 { close(inotify) }
        inotify = -1
        netif = nil
        links = nil
        parent = nil
        reportedRunning = nil
    }

    /// Watches what exists of `root` and `root/links` (or `root`'s nearest existing parent), then reports everything.
    private func rewatch() {
        if netif == nil {
            let watch = inotify_add_watch(inotify, root, Self.directoryMask)
            if watch >= 0 { netif = watch }
        }
        if netif != nil {
            if let parent { _ = inotify_rm_watch(inotify, parent.watch) }
            parent = nil
            if links == nil {
                let watch = inotify_add_watch(inotify, root + "/links", Self.directoryMask)
                if watch >= 0 { links = watch }
            }
        } else {
            watchParent()
        }
        report()
    }

    /// The nearest existing parent of `root`, for the next component to appear (adding a watch on a path already
    /// watched returns the same watch, so this keeps a watch that still fits).
    private func watchParent() {
        var child = root
        var path = Paths.directory(of: root)
        while !path.isEmpty {
            let watch = inotify_add_watch(inotify, path, UInt32(IN_CREATE | IN_MOVED_TO | IN_ONLYDIR))
            if watch >= 0 {
                if let parent, parent.watch != watch { _ = inotify_rm_watch(inotify, parent.watch) }
                parent = (watch, path, String(child.split(separator: "/").last ?? ""))
                return
            }
            guard path != "/" else { break }
            child = path
            path = Paths.directory(of: path)
        }
        problem("Cannot watch \(root) or a parent of it: networkd starting is not noticed")
    }

    private func report() {
        var states: [Int32: String] = [:]
        if links != nil, let stream = opendir(root + "/links") {
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if let index = Self.index(name), let state = administrativeState(of: name) { states[index] = state }
            }
            closedir(stream)
        }
        let running = isRunning
        reportedRunning = running
        send(.networkdStatesRead(running: running, administrative: states))
    }

    private var isRunning: Bool {
        netif != nil && access(root + "/state", F_OK) == 0
    }

    private func readable() {
        var events: [Inotify.Event] = []
        if inotify >= 0 {
            Inotify.read(inotify) { events += Inotify.events(in: $0) }
        }
        var again = false
        var stateFile = false
        // In the order first seen, each once (a burst writes thousands of files, most of them more than once).
        var changed: [String] = []
        var seen: Set<String> = []
        for event in events {
            if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                again = true
            } else if event.watch == netif || event.watch == links {
                let gone = UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)
                if event.mask & gone != 0 {
                    // The directory went (or moved away): its watch ends, and what is there now is watched.
                    if event.mask & UInt32(IN_IGNORED) == 0 { _ = inotify_rm_watch(inotify, event.watch) }
                    if event.watch == netif { netif = nil } else { links = nil }
                    again = true
                } else if event.watch == netif {
                    again = again || event.name == "links"
                    stateFile = stateFile || event.name == "state"
                } else if seen.insert(event.name).inserted {
                    changed.append(event.name)
                }
            } else if let parent, event.watch == parent.watch, event.name == parent.child {
                again = true
            }
        }
        // A full read covers every file changed meanwhile.
        if again || (stateFile && isRunning != reportedRunning) { return rewatch() }
        for name in changed {
            guard let index = Self.index(name) else { continue }
            send(.networkdStateChanged(index: index, administrative: administrativeState(of: name)))
        }
    }

    /// A state file's name is its link's index.
    private static func index(_ name: String) -> Int32? {
        guard !name.isEmpty, name.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int32(name)
    }

    /// `ADMIN_STATE=` of the file `name`, or `nil` when it is gone or says none.
    private func administrativeState(of name: String) -> String? {
        let fd = open(root + "/links/" + name, O_RDONLY | O_CLOEXEC)
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
