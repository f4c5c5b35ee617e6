import NetdevSession

/// The hooks of every event: those of the hook directories (`hooks.d`, every event) and of each event's own
/// directory beside them (`link-state.d`, `device-added.d`, ...: that event only), merged by file name in lexical
/// order as run-parts orders one directory.
///
/// For an event the directories count in this order, the first with a name winning: `/etc/netdevd/<event>.d`,
/// `/usr/lib/netdevd/<event>.d`, `/etc/netdevd/hooks.d`, `/usr/lib/netdevd/hooks.d` (each `<event>.d` is the
/// sibling of a hook directory, so `--hooks-dir` moves both). So `/etc` overrides `/usr/lib` as in one directory,
/// and a file in an event's directory overrides, or masks (a symlink to `/dev/null`), a same-named hook of
/// `hooks.d` for that event alone. Ownership rules, refusals and the directory checks are ``HookDiscovery``'s.
final class HookCatalog: Sendable {
    /// The hook directories, highest priority first (the `hooks.d` of every event).
    var directories: [String] { discovery.directories }
    /// One discovery for every event's list: listings, examinations and reported problems are shared.
    private let discovery: HookDiscovery
    /// Each event's directories, highest priority first.
    private let lists: [HookEvent: [String]]

    /// A catalog over `directories`; `report` hears of a directory that exists but cannot be read, once per
    /// directory and problem.
    init(directories: [String], report: @escaping @Sendable (_ directory: String, _ problem: String) -> Void) {
        discovery = HookDiscovery(directories: directories, report: report)
        var lists: [HookEvent: [String]] = [:]
        for event in HookEvent.allCases {
            lists[event] = Self.directories(for: event, hookDirectories: directories)
        }
        self.lists = lists
        let batchDirectories = directories.map { Paths.directory(of: $0) + "/batch.d" }
        self.batchDirectories = batchDirectories
        var seen: Set<String> = []
        everyDirectory = (HookEvent.allCases.flatMap { lists[$0] ?? [] } + batchDirectories).filter {
            seen.insert($0).inserted
        }
    }

    /// The directories `event`'s hooks come from, highest priority first: each hook directory's sibling
    /// `<event>.d`, then the hook directories.
    static func directories(for event: HookEvent, hookDirectories: [String]) -> [String] {
        hookDirectories.map { Paths.directory(of: $0) + "/" + event.rawValue + ".d" } + hookDirectories
    }

    /// The directories of the batch hooks: `batch.d` beside each hook directory, highest priority first.
    let batchDirectories: [String]

    /// Every directory a hook of some event, or a batch hook, comes from, each once.
    let everyDirectory: [String]

    /// Whether a hook of some event or a batch hook is installed, or a file refused as one (whose runs then say
    /// why it did not start). Masked names do not count.
    /// Stops at the first event with one, so it examines no more hooks than it must (it runs on the loop's queue).
    func anyInstalled() -> Bool {
        HookEvent.allCases.contains { !hooks(for: $0).isEmpty } || !batchHooks().isEmpty
    }

    /// The batch hooks (``HookBatches``), in lexical order, with refusals explained.
    func batchHooks() -> [HookFile] {
        discovery.hooks(in: batchDirectories)
    }

    /// The hooks of the hook directories alone (those that run for every event).
    func everyEventHooks() -> [HookFile] {
        discovery.hooks()
    }

    /// The hooks that would run for `event` now, in lexical order, with refusals explained.
    func hooks(for event: HookEvent) -> [HookFile] {
        discovery.hooks(in: lists[event] ?? directories)
    }

    /// How many hooks would run for each event (by its name; `batch` for the batch hooks), and how many files
    /// found are refused.
    func counts() -> (hooks: [String: Int], refused: Int) {
        var counts: [String: Int] = [:]
        var refused: Set<String> = []
        let lists = HookEvent.allCases.map { ($0.rawValue, hooks(for: $0)) } + [(HookBatches.event, batchHooks())]
        for (name, hooks) in lists {
            counts[name] = hooks.filter { $0.refusal == nil }.count
            for hook in hooks where hook.refusal != nil { refused.insert(hook.path) }
        }
        return (counts, refused.count)
    }
}
