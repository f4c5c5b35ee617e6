import JSONCoding

#if canImport(Glibc)
import Glibc
#endif

/// networkd-dispatcher's scripts of one state, found as networkd-dispatcher 2.2 finds them: the names in
/// `<directory>/<state>.d` of every configured directory, in sorted order; for each name, the first directory
/// (in the configured order) where it is a regular file (after symlinks) whose directory is mode 0755 owned by
/// root:root (not followed) and whose file, followed to its end, is mode 0755 owned by root:root. A name whose file
/// fails the check in one directory is looked for in the next. A name that is no regular file anywhere (a
/// directory, a symlink to `/dev/null`) does not run: networkd-dispatcher has no masking.
///
/// The hook runner reads it before every start, as networkd-dispatcher does (a directory that does not exist costs
/// one failed `opendir`), to start only what this finds; netdevd reads it through ``DispatcherScriptListings``, which
/// reuses a listing while the directories do not change.
enum DispatcherScripts {
    /// The states networkd-dispatcher knows, administrative and operational: the only directories it runs.
    static let states: Set<String> = [
        "configured", "configuring", "failed", "pending", "unmanaged", "linger", "initialized",
        "carrier", "degraded", "degraded-carrier", "dormant", "enslaved", "missing", "no-carrier", "off", "routable",
    ]

    /// What was found: the scripts to run, in order, and the files refused, with the reason (networkd-dispatcher's
    /// "invalid permissions" error).
    struct Listing: Equatable {
        var scripts: [String] = []
        var refused: [(path: String, reason: String)] = []

        static func == (lhs: Listing, rhs: Listing) -> Bool {
            lhs.scripts == rhs.scripts && lhs.refused.map(\.path) == rhs.refused.map(\.path)
        }
    }

    /// The scripts of `state` under `directories`, highest priority first.
    static func scripts(of state: String, in directories: [String]) -> Listing {
        var listing = Listing()
        guard states.contains(state) else { return listing }
        let subdirectories = directories.map { $0 + "/" + state + ".d" }
        var names = Set<String>()
        for directory in subdirectories {
            switch entries(of: directory) {
            case .success(let found): names.formUnion(found)
            case .failure(let problem): listing.refused.append((directory, problem.reason))
            }
        }
        for name in names.sorted(by: JSONOutput.utf8Precedes) {
            for directory in subdirectories {
                let path = directory + "/" + name
                var status = stat()
                guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
                if let reason = permissionProblem(directory, followingLinks: false) {
                    listing.refused.append((directory, reason))
                    continue
                }
                if let reason = permissionProblem(path, followingLinks: true) {
                    listing.refused.append((path, reason))
                    continue
                }
                listing.scripts.append(path)
                break
            }
        }
        return listing
    }

    /// `nil` when `path` is mode 0755 and owned by root:root, or what it is instead.
    static func permissionProblem(_ path: String, followingLinks: Bool) -> String? {
        var status = stat()
        let result = followingLinks ? stat(path, &status) : lstat(path, &status)
        guard result == 0 else { return String(cString: strerror(errno)) }
        let mode = status.st_mode & 0o7777
        guard mode != 0o755 || status.st_uid != 0 || status.st_gid != 0 else { return nil }
        return "mode \(String(mode, radix: 8)), owner \(status.st_uid):\(status.st_gid); networkd-dispatcher's "
            + "scripts and their directories must be mode 755 and owned by root:root"
    }

    /// Why a directory that exists cannot be listed.
    struct Unlisted: Error {
        var reason: String
    }

    /// The names in `directory` (without `.` and `..`): none when it does not exist, and why, when it exists but
    /// cannot be listed (a file, a symlink loop, unreadable).
    private static func entries(of directory: String) -> Result<[String], Unlisted> {
        guard let stream = opendir(directory) else {
            let reason = errno
            guard reason != ENOENT else { return .success([]) }
            return .failure(Unlisted(reason: "cannot be listed: " + String(cString: strerror(reason))))
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return .success(names)
    }
}
