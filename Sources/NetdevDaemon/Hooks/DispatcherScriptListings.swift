/// netdevd's reading of ``DispatcherScripts``: a state's listing reused while its directories did not change, so a
/// burst of links entering the same states does not list and examine the same directories for every run on the hook
/// runner's queue (which is the loop's). The state directories are watched by inotify (``HookDirectoryWatch``, as
/// the hook directories are); a listing is reused for at most a second, which bounds what inotify cannot tell (a
/// symlinked script's target changed). The hook runner examines every script again before it starts it, so a listing
/// a second old can at worst ask for a script the runner then refuses, and says why.
///
/// Not `Sendable`: used only on the hook runner's queue.
final class DispatcherScriptListings {
    private struct Cached {
        var directories: [String]
        var generation: UInt64
        var validUntil: UInt64
        var listing: DispatcherScripts.Listing
    }

    /// `nil` without inotify: every run lists, as networkd-dispatcher does.
    private let watch = HookDirectoryWatch()
    private var cached: [String: Cached] = [:]

    /// The scripts of `state` under `directories` (see ``DispatcherScripts/scripts(of:in:)``).
    func scripts(of state: String, in directories: [String]) -> DispatcherScripts.Listing {
        guard DispatcherScripts.states.contains(state) else { return DispatcherScripts.Listing() }
        let subdirectories = directories.map { $0 + "/" + state + ".d" }
        guard let watched = watch?.current(for: subdirectories), subdirectories.allSatisfy(watched.covered.contains)
        else {
            cached[state] = nil
            return DispatcherScripts.scripts(of: state, in: directories)
        }
        let now = PollerTimer.now()
        if let last = cached[state], last.directories == directories, last.generation == watched.generation,
            now < last.validUntil
        {
            return last.listing
        }
        let listing = DispatcherScripts.scripts(of: state, in: directories)
        cached[state] = Cached(
            directories: directories, generation: watched.generation, validUntil: now + 1_000_000_000,
            listing: listing)
        return listing
    }
}
