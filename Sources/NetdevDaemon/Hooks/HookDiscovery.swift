import Locking

#if canImport(Glibc)
import Glibc
#endif

/// Finds the hooks to run, and says why a file found must not run.
///
/// Discovery runs before every hook run, so a hook dropped into a directory is used from the next event on, with
/// no reload. The directories are watched (``HookDirectoryWatch``): a directory is listed again, and its hooks
/// examined again, only after a change in it (an entry added, removed, renamed, rewritten, chmod-ed or chown-ed), so
/// a hook made writable by others is refused from the next run on, and a run in unchanged directories (or in one
/// that does not exist) looks at nothing. What inotify cannot tell (a parent directory replaced, a symlinked
/// directory pointed elsewhere, a network file system changed from elsewhere) is seen within a second: a watched
/// listing is reused for at most ``reexaminationNanoseconds``. A hook with other hard links (changeable through a
/// path no watch hears of) is looked at every run, as is a directory that could not be read. Without inotify, a directory is listed again when its inode, modification
/// or change time changed (a listing made within a second of that change is not reused: a file added in the same tick
/// of the kernel's coarse clock leaves the modification time as it was), and each hook file is looked at (`lstat`)
/// on every run; so is a symlinked hook's, and its target's, whose directory is not watched. Either way the full
/// examination (the owner and mode of every directory above the hook and its target, which are not watched) is reused
/// for at most ``reexaminationNanoseconds``: a directory above a hook made writable by others refuses it within a
/// second. (A burst runs a hook
/// thousands of times a second; examining each path's directories every time was a tenth of netdevd's CPU, and
/// looking at the directories every run a tenth again.)
final class HookDiscovery: Sendable {
    /// The directories searched, highest priority first.
    let directories: [String]
    /// How long a hook's full examination is reused while the file itself is unchanged.
    let reexaminationNanoseconds: UInt64
    private let listings = Locked<[String: Listing]>([:])
    /// The last examination of each hook path in use.
    private let examinations = Locked<[String: Examination]>([:])
    /// The problem last reported for each directory, so a directory that stays unreadable is said once.
    private let reported = Locked<[String: String]>([:])
    /// Told when a hook directory exists but cannot be read: its hooks would otherwise silently not run.
    private let report: @Sendable (_ directory: String, _ problem: String) -> Void

    /// Changes to the directories, when inotify can be had: a run in directories that did not change looks at
    /// nothing.
    private let watch = HookDirectoryWatch()

    /// The last answer for each list of directories, reused while the watch saw no change in them, none of its
    /// hooks is a symlink (looked at every run) and no examination in it is due again.
    private let answers = Locked<[[String]: Answer]>([:])

    private struct Answer {
        var generation: UInt64
        var hooks: [HookFile]
        var validUntil: UInt64
    }

    /// One directory's names, and the identity of the directory they were read from (`nil`: it did not exist), or
    /// the watch's generation they were read at.
    private struct Listing {
        var identity: FileIdentity?
        var names: [String]
        var generation: UInt64?
        /// When it was read (``PollerTimer/now()``): a watched listing is reused for at most
        /// ``reexaminationNanoseconds``, which bounds what inotify cannot tell.
        var listedAt: UInt64 = 0
    }

    /// A hook file's examination, valid while the file (and, for a symlink, its target) is the same file with the
    /// same owner and mode, for ``reexaminationNanoseconds`` from `examined`.
    private struct Examination {
        /// `nil` when the file could not be examined: never reused.
        var file: FileIdentity?
        var target: FileIdentity?
        /// A symlink's text.
        var linkText: String?
        var examined: UInt64
        /// A symlink to `/dev/null`.
        var masked: Bool
        var refusal: String?
        /// The watch's generation when examined, if its directory is watched.
        var generation: UInt64? = nil
    }

    /// What changes when a file is replaced, or its owner or mode change (each sets its change time), or a
    /// directory's entries change (its modification time): a hook's identity, and a listed directory's.
    private struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
        var mode: UInt32
        var owner: UInt32
        var changedSeconds: Int
        var changedNanoseconds: Int
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
        /// Hard links: a file with more than one may be changed through a path no watch of ours hears of.
        var links: UInt64

        init(_ status: stat) {
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
            mode = UInt32(status.st_mode)
            owner = UInt32(status.st_uid)
            changedSeconds = Int(status.st_ctim.tv_sec)
            changedNanoseconds = Int(status.st_ctim.tv_nsec)
            modifiedSeconds = Int(status.st_mtim.tv_sec)
            modifiedNanoseconds = Int(status.st_mtim.tv_nsec)
            links = UInt64(status.st_nlink)
        }

        var isSymlink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }

        /// `path`'s identity, following symlinks or not; `nil` when it cannot be examined.
        static func of(_ path: String, following: Bool) -> FileIdentity? {
            var status = stat()
            return (following ? stat(path, &status) : lstat(path, &status)) == 0 ? FileIdentity(status) : nil
        }
    }

    init(
        directories: [String], reexaminationNanoseconds: UInt64 = 1_000_000_000,
        report: @escaping @Sendable (_ directory: String, _ problem: String) -> Void
    ) {
        self.directories = directories
        self.reexaminationNanoseconds = reexaminationNanoseconds
        self.report = report
    }

    /// The hooks that would run now, in lexical order; a same-named file in an earlier directory overrides, one
    /// that is a symlink to `/dev/null` masks. Refusals are explained, not dropped.
    func hooks() -> [HookFile] {
        hooks(in: directories)
    }

    /// ``hooks()`` of another list of directories, highest priority first (an event's: its own directories and
    /// the hook directories). Listings, examinations and reported problems are kept per directory and per file,
    /// shared by every list: a directory used by several lists is listed once per change, and a problem with it
    /// is said once.
    func hooks(in directories: [String]) -> [HookFile] {
        let watched = watch?.current(for: directories)
        let now = PollerTimer.now()
        let allWatched = watched.map { watched in directories.allSatisfy(watched.covered.contains) } ?? false
        if allWatched, let watched, let answer = answers.withLock({ $0[directories] }),
            answer.generation == watched.generation, now < answer.validUntil
        {
            return answer.hooks
        }
        var chosen: [String: String] = [:]
        var present: Set<String> = []
        // The answer is reused until the oldest listing in it is due again; not at all when one failed.
        var listingsDue: UInt64? = .max
        for directory in directories.reversed() {
            let (names, listedAt) = names(in: directory, watched: watched, now: now)
            listingsDue = listedAt.flatMap { listedAt in
                listingsDue.map { min($0, listedAt &+ reexaminationNanoseconds) }
            }
            for name in names {
                chosen[name] = directory + "/" + name
                present.insert(directory + "/" + name)
            }
        }
        let previous = examinations.withLock { $0 }
        var current: [String: Examination] = [:]
        let hooks = chosen.keys.sorted().compactMap { name -> HookFile? in
            let path = chosen[name]!
            let examination = examine(path, reusing: previous[path], now: now, watched: watched)
            current[path] = examination
            return examination.masked ? nil : HookFile(name: name, path: path, refusal: examination.refusal)
        }
        // What these directories no longer hold is forgotten; a file they hold but this list does not choose (a
        // hooks.d hook an event's directory overrides) is kept for the lists that do.
        let listed = Set(directories)
        examinations.withLock { examinations in
            examinations = examinations.filter { path, _ in
                present.contains(path) || !listed.contains(Paths.directory(of: path))
            }
            examinations.merge(current) { _, new in new }
        }
        answers.withLock { answers in
            let reusable =
                allWatched
                && current.values.allSatisfy {
                    $0.generation != nil && $0.file?.isSymlink == false && $0.file?.links == 1
                }
            if let watched, reusable, let listingsDue {
                let due = current.values.map { $0.examined &+ reexaminationNanoseconds }.min() ?? .max
                answers[directories] = Answer(
                    generation: watched.generation, hooks: hooks, validUntil: min(due, listingsDue))
            } else {
                answers[directories] = nil
            }
        }
        return hooks
    }

    /// `path` examined, or `last` when it is still valid: recent enough, and made at the watch's generation (its
    /// directory watched and unchanged since), or, unwatched, of the same file (and target).
    private func examine(
        _ path: String, reusing last: Examination?, now: UInt64, watched: (generation: UInt64, covered: Set<String>)?
    ) -> Examination {
        let generation = watched.flatMap { $0.covered.contains(Paths.directory(of: path)) ? $0.generation : nil }
        // A symlink's target is elsewhere, unwatched: its identity is looked at every run, as without a watch.
        if let last, let generation, last.generation == generation, last.file?.isSymlink == false,
            last.file?.links == 1, now &- last.examined < reexaminationNanoseconds
        {
            return last
        }
        let file = FileIdentity.of(path, following: false)
        let target = file.flatMap { $0.isSymlink ? FileIdentity.of(path, following: true) : nil }
        // A symlink replaced by another (same inode number reused, same tick) naming the same file by another
        // path differs only in its text.
        let linkText = file?.isSymlink == true ? Self.linkText(path) : nil
        if let last, file != nil, last.file == file, last.target == target, last.linkText == linkText,
            now &- last.examined < reexaminationNanoseconds
        {
            return last
        }
        // Identities taken before the examination: a change during it makes the next run examine again.
        let masked = linkText == "/dev/null"
        return Examination(
            file: file, target: target, linkText: linkText, examined: now, masked: masked,
            refusal: masked ? nil : Self.refusal(path), generation: file == nil ? nil : generation)
    }

    /// The entries of `directory` that may be hooks; none if it does not exist, and none, reported, if it exists
    /// but cannot be read; with when they were read, or `nil` when they must not be reused (it could not be read).
    private func names(
        in directory: String, watched: (generation: UInt64, covered: Set<String>)?, now: UInt64
    ) -> (names: [String], listedAt: UInt64?) {
        let generation = watched.flatMap { $0.covered.contains(directory) ? $0.generation : nil }
        if let generation, let listing = listings.withLock({ $0[directory] }), listing.generation == generation,
            now &- listing.listedAt < reexaminationNanoseconds
        {
            return (listing.names, listing.listedAt)
        }
        var status = stat()
        guard stat(directory, &status) == 0 else {
            let reason = errno
            listings.withLock { listings in
                // A directory that does not exist costs nothing while its parent is watched for it.
                listings[directory] =
                    reason == ENOENT && generation != nil
                    ? Listing(identity: nil, names: [], generation: generation, listedAt: now) : nil
            }
            guard reason == ENOENT else {
                problem("cannot be examined: \(String(cString: strerror(reason)))", in: directory)
                return ([], nil)
            }
            reported.withLock { _ = $0.removeValue(forKey: directory) }
            return ([], now)
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            problem("is not a directory", in: directory)
            return ([], nil)
        }
        let identity = FileIdentity(status)
        let last = listings.withLock { $0[directory] }
        if generation == nil, let last, last.identity == identity {
            return (last.names, nil)
        }
        if generation != nil, let before = last?.identity,
            before.device != identity.device || before.inode != identity.inode
        {
            // Another directory under the path than the one watched: watched again from the next run.
            watch?.invalidate()
        }
        let names: [String]
        switch TextFile.names(in: directory) {
        case .success(let listed): names = (listed ?? []).filter { !Self.isLeftover($0) }
        case .failure(let failure):
            problem("cannot be listed: \(failure)", in: directory)
            return ([], nil)
        }
        reported.withLock { _ = $0.removeValue(forKey: directory) }
        var wallClock = timespec()
        clock_gettime(CLOCK_REALTIME, &wallClock)
        // Unwatched, a listing is reused by the directory's identity, which a change within the same tick of the
        // kernel's coarse clock may leave as it was; watched, any change is an event.
        let settled = Int(wallClock.tv_sec) - identity.modifiedSeconds > 1
        listings.withLock { listings in
            listings[directory] =
                generation != nil
                ? Listing(identity: identity, names: names, generation: generation, listedAt: now)
                : settled ? Listing(identity: identity, names: names, generation: nil) : nil
        }
        return (names, generation == nil ? nil : now)
    }

    /// Reports `text` about `directory` unless it was the last thing reported about it.
    private func problem(_ text: String, in directory: String) {
        let isNew = reported.withLock { reported -> Bool in
            defer { reported[directory] = text }
            return reported[directory] != text
        }
        if isNew { report(directory, text) }
    }

    /// Names that are never hooks: `.` and `..`, hidden files, editor backups and the copies dpkg and ucf leave
    /// beside a changed file (`50-x.dpkg-old`, `.dpkg-dist`, `.dpkg-new`, `.ucf-dist`, ...), as run-parts skips
    /// them.
    static func isLeftover(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix("~") || name.containsBytes(".dpkg-") || name.containsBytes(".ucf-")
            || name.hasSuffix(".rpmnew") || name.hasSuffix(".rpmsave") || name.hasSuffix(".swp")
    }

    /// The text of the symlink at `path` (`/dev/null` masks the hook of that name); `nil` when it cannot be read.
    static func linkText(_ path: String) -> String? {
        var text = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = text.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { readlink(path, $0.baseAddress!, $0.count) }
        }
        return count >= 0 ? String(decoding: text.prefix(count), as: UTF8.self) : nil
    }

    /// Why the file at `path` must not run (not a regular file, not root's, writable by group or others, not
    /// executable, or reached through a directory that someone other than root could change), or `nil` when it
    /// may. Symlinks are followed: the file they name is what runs.
    static func refusal(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return "cannot be examined: \(String(cString: strerror(errno)))" }
        guard (status.st_mode & S_IFMT) == S_IFREG else { return "is not a regular file" }
        guard status.st_uid == 0 else { return "is owned by uid \(status.st_uid), not root" }
        guard status.st_mode & (S_IWGRP | S_IWOTH) == 0 else { return "is writable by group or others" }
        guard status.st_mode & S_IXUSR != 0 else { return "is not executable" }
        return pathRefusal(path)
    }

    /// The most symlinks followed on the way to a hook (the kernel's own limit, as `ELOOP` counts them).
    static let symlinkLimit = 40

    /// Why someone other than root could make `path` name another file, or `nil`: whoever may write a directory
    /// may replace any entry in it, so every directory in which a name on the way is looked up must be root's and
    /// not writable by group or others (a sticky one, such as /tmp, lets no one replace another's entry; a symlink
    /// in it must then be root's too). `path` is walked as the kernel resolves it, one name at a time, following
    /// every symlink, in the hook's path, in a link's text or in a directory on the way, so each link of a chain
    /// (hook -> /opt/a/link -> /usr/lib/x/file) has its own directory examined.
    static func pathRefusal(_ path: String) -> String? {
        var pending = Array(names(of: path).reversed())
        var directory = path.hasPrefix("/") ? "/" : currentDirectory()
        var examined: Set<String> = []
        var followed = 0
        while let name = pending.popLast() {
            if name == "." { continue }
            if name == ".." {
                directory = parent(of: directory)
                continue
            }
            var status = stat()
            guard stat(directory, &status) == 0 else {
                return "is in \(directory), which cannot be examined: \(String(cString: strerror(errno)))"
            }
            if examined.insert(directory).inserted {
                guard status.st_uid == 0 else {
                    return "is in \(directory), owned by uid \(status.st_uid), not root"
                }
                guard status.st_mode & (S_IWGRP | S_IWOTH) == 0 || status.st_mode & S_ISVTX != 0 else {
                    return "is in \(directory), which is writable by group or others"
                }
            }
            // A sticky directory others may write: only an entry's owner (or root) may replace it.
            let othersMayAdd = status.st_mode & S_ISVTX != 0 && status.st_mode & (S_IWGRP | S_IWOTH) != 0
            let entry = directory == "/" ? "/" + name : directory + "/" + name
            guard lstat(entry, &status) == 0 else {
                return "is reached through \(entry), which cannot be examined: \(String(cString: strerror(errno)))"
            }
            guard (status.st_mode & S_IFMT) == S_IFLNK else {
                directory = entry
                continue
            }
            followed += 1
            guard followed <= symlinkLimit else { return "is reached through more than \(symlinkLimit) symlinks" }
            guard !othersMayAdd || status.st_uid == 0 else {
                return "is reached through \(entry), a symlink owned by uid \(status.st_uid) in a directory others "
                    + "may write"
            }
            guard let text = linkText(entry) else {
                return "is reached through \(entry), which cannot be read: \(String(cString: strerror(errno)))"
            }
            if text.hasPrefix("/") { directory = "/" }
            pending.append(contentsOf: names(of: text).reversed())
        }
        return nil
    }

    /// The working directory, for a relative hook path (the configuration's are absolute).
    private static func currentDirectory() -> String {
        guard let buffer = getcwd(nil, 0) else { return "." }
        defer { free(buffer) }
        return String(cString: buffer)
    }

    /// The directory part of `path` (`/` for a file at the root, `.` for a bare name).
    static func parent(of path: String) -> String {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == bytes.startIndex ? "/" : String(Substring(bytes[..<slash]))
    }

    /// The names in `path` as the kernel splits it: at every `/` byte, empty names dropped. (Split on characters, a
    /// `/` followed by a combining mark would be one character, and no separator.)
    static func names(of path: String) -> [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) }
    }
}
