import Dispatch
import MobiusCore
import NetdevSession

/// Tells the session whether any hook is installed (``Event/hooksInstalled(_:)``), so that with none a change
/// queues no hook run: such a run would find nothing to start, and its end would cost a second step of the loop (a
/// tenth of the loop's thread in a burst of 20,000 links, docs/PERFORMANCE.md).
///
/// Says it when subscribed, then after each change in the hook directories (every event's, the batch hooks', and
/// their parents while they do not exist), which are watched by inotify of their own (the discovery's watch counts
/// its changes for itself), and when asked (``recheck()``: netdevd asks at each reload). Nothing is polled. What
/// inotify cannot tell (a parent of the directories replaced, a symlinked directory pointed elsewhere) is seen at
/// the next change in them or the next reload. Says `true` for as long as a directory cannot be watched: then every
/// change queues its run, as if hooks were installed.
///
/// The watch is read on the loop's queue: a hook installed before a change is read is seen before it, unless both
/// come within one wake-up of the loop (then the change's event may come first, and its hooks do not run).
///
/// `@unchecked Sendable`: `token`, `consumer` and `said` are read and written only on `queue`.
final class HookPresenceSource: EventSource, @unchecked Sendable {
    private let catalog: HookCatalog
    private let queue: DispatchQueue
    private let watch = HookDirectoryWatch()
    private var token: UInt64?
    private var consumer: Consumer<Event>?
    /// What the session was told last.
    private var said: Bool?

    /// A source over `runner`'s hook directories, read on `queue`.
    init(runner: HookRunner, queue: DispatchQueue) {
        catalog = runner.catalog
        self.queue = queue
    }

    deinit {
        if let token { Poller.shared?.unregister(token) }
    }

    func subscribe(consumer: @escaping Consumer<Event>) -> any Disposable {
        queue.async { [self] in
            self.consumer = consumer
            if let watch {
                token = Poller.shared?.register(watch.descriptor, queue: queue) { [weak self] in self?.report() }
            }
            report()
        }
        return AnonymousDisposable { [self] in
            queue.async { [self] in
                if let token { Poller.shared?.unregister(token) }
                token = nil
                self.consumer = nil
            }
        }
    }

    /// Looks at the directories again, and tells the session if that changed what it knows.
    func recheck() {
        queue.async { [self] in report() }
    }

    /// Reads the watch's changes (and watches directories that appeared), then says whether a hook is installed
    /// when that differs from what was said last. On queue.
    private func report() {
        guard let consumer else { return }
        var installed = true
        if let watch, token != nil {
            let directories = catalog.everyDirectory
            let covered = watch.current(for: directories).covered
            installed = directories.contains { !covered.contains($0) } || catalog.anyInstalled()
        }
        guard installed != said else { return }
        said = installed
        consumer(.hooksInstalled(installed))
    }
}
