#if canImport(Glibc)
import Glibc
#endif

/// The user and groups hooks run as, from `[Hooks] User=` and `Group=`, resolved by the hook runner (never taken
/// from netdevd's requests): a user's primary group and supplementary groups as the system lists them; `Group=`
/// replaces the primary group.
struct HookCredentials: Sendable, Equatable {
    var uid: uid_t
    var gid: gid_t
    var groups: [gid_t]

    /// The credentials for `user` and `group` (names or numbers), `nil` when neither is set (hooks run as the
    /// runner does), or why they cannot be used: a name that does not exist, or a runner that is not root and
    /// would have to change user.
    static func resolve(user: String?, group: String?) -> Result<HookCredentials?, HookCredentialsProblem> {
        guard user != nil || group != nil else { return .success(nil) }
        var credentials = HookCredentials(uid: geteuid(), gid: getegid(), groups: [])
        if let user {
            let entry: UnsafeMutablePointer<passwd>?
            if user.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                // A number: the user database's entry if it has one; a number without one is still a user, as
                // systemd's User= allows. Never -1 (setresuid's "unchanged") or one that does not fit.
                guard let number = uid_t(user), number != uid_t.max else {
                    return .failure(HookCredentialsProblem("User=\(user) is not a valid user number"))
                }
                entry = getpwuid(number)
                if entry == nil {
                    credentials.uid = number
                    credentials.gid = number
                    return finish(credentials, group: group, user: user)
                }
            } else {
                entry = getpwnam(user)
            }
            guard let entry else { return .failure(HookCredentialsProblem("User=\(user): no such user")) }
            credentials.uid = entry.pointee.pw_uid
            credentials.gid = entry.pointee.pw_gid
            let name = String(cString: entry.pointee.pw_name)
            var count: Int32 = 64
            var groups = [gid_t](repeating: 0, count: Int(count))
            if getgrouplist(name, credentials.gid, &groups, &count) < 0 {
                groups = [gid_t](repeating: 0, count: Int(count))
                _ = getgrouplist(name, credentials.gid, &groups, &count)
            }
            credentials.groups = Array(groups.prefix(Int(max(count, 0))))
        }
        return finish(credentials, group: group, user: user)
    }

    private static func finish(
        _ resolved: HookCredentials, group: String?, user: String?
    ) -> Result<HookCredentials?, HookCredentialsProblem> {
        var credentials = resolved
        if let group {
            if group.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                guard let number = gid_t(group), number != gid_t.max else {
                    return .failure(HookCredentialsProblem("Group=\(group) is not a valid group number"))
                }
                credentials.gid = number
            } else if let entry = getgrnam(group) {
                credentials.gid = entry.pointee.gr_gid
            } else {
                return .failure(HookCredentialsProblem("Group=\(group): no such group"))
            }
            if user == nil { credentials.groups = [credentials.gid] }
        }
        if credentials.groups.isEmpty { credentials.groups = [credentials.gid] }
        if geteuid() != 0 {
            guard credentials.uid == geteuid(), credentials.gid == getegid() else {
                return .failure(
                    HookCredentialsProblem(
                        "the hook runner runs as uid \(geteuid()) and cannot start hooks as uid \(credentials.uid) "
                            + "gid \(credentials.gid) (User=, Group=); run it as root or remove them"))
            }
            return .success(nil)
        }
        return .success(credentials)
    }
}

/// Why `[Hooks] User=` or `Group=` cannot be used, in words.
struct HookCredentialsProblem: Error, Equatable {
    let reason: String

    init(_ reason: String) {
        self.reason = reason
    }
}
