import Locking

#if canImport(Glibc)
import Glibc
#endif

/// Changes to the hook directories, by inotify, so that a run whose directories did not change finds its hooks
/// without looking at the file system: each directory is watched while it exists (entries added, removed, renamed,
/// chmod-ed, chown-ed or rewritten), and the nearest existing parent of one that does not, for it to appear.
///
/// Nothing is polled: a run reads the inotify queue once, without waiting (one `read` that finds it empty when
/// nothing changed). Every change counts: ``generation`` grows with each read that found events, and a listing or
/// examination made at an older generation is not reused. What inotify cannot tell (a parent directory replaced, a
/// symlinked directory pointed elsewhere, a network file system changed from elsewhere) is bounded by the discovery's
/// reuse, at most a second. Watches are not removed: a parent watched for a directory that appeared stays, and its
/// changes only make the next run look again.
final class HookDirectoryWatch: Sendable {
    private struct State {
        var generation: UInt64 = 1
        /// The directories watched themselves, or through a parent while they do not exist.
        var covered: Set<String> = []
        /// A watch may have ended or a directory appeared: watches are set again before the next use.
        var stale = false
        /// Directories that could be watched neither themselves nor through a parent (the watch limit, a
        /// security module), and when that was last tried: tried again at most once a second.
        var unwatchable: [String: UInt64] = [:]
    }

    private let inotify: Int32
    private let state = Locked(State())

    /// The inotify descriptor: readable when a change waits to be read (``current(for:)`` reads it).
    var descriptor: Int32 { inotify }

    private static let directoryMask = UInt32(
        IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF
            | IN_MOVE_SELF | IN_ONLYDIR)
    private static let parentMask = UInt32(
        IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// A watch, or `nil` when inotify cannot be had (discovery then looks at the directories every run).
    init?() {
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else { return nil }
    }

    deinit {
        close(inotify)
    }

    /// The generation now, after reading what changed, with `directories` watched; and which of them are covered
    /// (watched, or awaited in a parent): only their listings may be reused.
    func current(for directories: [String]) -> (generation: UInt64, covered: Set<String>) {
        state.withLock { state in
            if drain() {
                state.generation += 1
                state.stale = true
            }
            if state.stale {
                state.covered = []
                state.unwatchable = [:]
                state.stale = false
            }
            let now = PollerTimer.now()
            var added = false
            for directory in directories where !state.covered.contains(directory) {
                if let tried = state.unwatchable[directory], now &- tried < 1_000_000_000 { continue }
                if watch(directory) {
                    state.covered.insert(directory)
                    state.unwatchable[directory] = nil
                    added = true
                } else {
                    state.unwatchable[directory] = now
                }
            }
            // Watches set now may have caught a change made meanwhile: nothing read before counts.
            if added { state.generation += 1 }
            return (state.generation, state.covered)
        }
    }

    /// A directory is another than the one watched under its path (a parent replaced): watches are set again, and
    /// nothing read before counts.
    func invalidate() {
        state.withLock { state in
            state.stale = true
            state.generation += 1
        }
    }

    /// Reads every pending event; `true` if there was any.
    private func drain() -> Bool {
        var any = false
        Inotify.read(inotify) { _ in any = true }
        return any
    }

    /// Watches `directory`, or its nearest existing parent for it to appear; `false` when neither can be. Masks
    /// add to what an inode is watched for already (a hook directory may be another's parent too).
    private func watch(_ directory: String) -> Bool {
        if inotify_add_watch(inotify, directory, Self.directoryMask | UInt32(IN_MASK_ADD)) >= 0 { return true }
        guard errno == ENOENT || errno == ENOTDIR else { return false }
        var path = Paths.directory(of: directory)
        while true {
            if inotify_add_watch(inotify, path, Self.parentMask | UInt32(IN_MASK_ADD)) >= 0 {
                // It may have been made between the two: then it is watched itself.
                _ = inotify_add_watch(inotify, directory, Self.directoryMask | UInt32(IN_MASK_ADD))
                return true
            }
            guard (errno == ENOENT || errno == ENOTDIR) && path != "/" && path != "." else { return false }
            path = Paths.directory(of: path)
        }
    }
}
