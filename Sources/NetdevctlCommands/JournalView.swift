import CommandOptions
import JSONCoding
import NetdevWire
import Syslog
import Systemd

#if canImport(Glibc)
import Glibc
#endif

/// What `netdevctl log` and `netdevctl status LINK` read of the journal: netdevd's entries, about one subject or
/// all, the newest `count` of them since a time, from the host's journal or a directory of journal files.
struct JournalView {
    var subject: String?
    var count: Int?
    var since: UInt64?
    var directory: String?

    /// The line printed instead of entries when the journal may not be read.
    static let notPermitted =
        "Journal entries are not shown: reading netdevd's needs root, or membership of the 'systemd-journal' or "
        + "'adm' group (usermod -aG systemd-journal USER)."

    init(subject: String?, count: Int?, since: UInt64? = nil, directory: String? = nil) {
        self.subject = subject
        self.count = count
        self.since = since
        self.directory = directory
    }

    /// From `netdevctl log`'s command line: `-n`, `--since` and `--directory` checked.
    init(_ parsed: ParsedCommand, spec: CommandSpec) throws(UsageError) {
        subject = parsed.argument("subject")
        if subject?.isEmpty == true {
            throw UsageError(spec, "The link or device is empty; leave it out for every entry of netdevd's")
        }
        directory = parsed.value("directory")
        if let lines = parsed.value("lines") {
            // A count larger than any journal holds is every entry.
            guard !lines.isEmpty, lines.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else {
                throw UsageError(spec, "'-n' takes a number of entries, 0 or more; '\(lines)' is not one")
            }
            count = Int(lines) ?? Int.max
        }
        if let text = parsed.value("since") {
            guard let time = JournalTime.parse(text) else {
                throw UsageError(spec, "'--since \(text)' is not a time. \(JournalTime.forms)")
            }
            since = time
        }
    }

    /// Whether this user may read the journal asked for: root, a member of `systemd-journal` or `adm`, or (for a
    /// directory) anyone who can read it.
    var permitted: Bool {
        if let directory {
            // Readable when any journal file in it (or in its machine-id directories) is: a directory anyone may
            // list often holds files only the journal's groups may read.
            let files = Self.journalFiles(in: directory)
            return files.isEmpty
                ? access(directory, R_OK | X_OK) == 0 || errno != EACCES
                : files.contains { access($0, R_OK) == 0 }
        }
        if geteuid() == 0 { return true }
        var groups = [gid_t](repeating: 0, count: Int(max(getgroups(0, nil), 0)) + 1)
        let count = getgroups(Int32(groups.count - 1), &groups)
        groups = Array(groups.prefix(Int(max(count, 0)))) + [getegid()]
        return ["systemd-journal", "adm"].contains { name in
            guard let group = getgrnam(name) else { return false }
            return groups.contains(group.pointee.gr_gid)
        }
    }

    /// The `*.journal` files in `directory` and in its subdirectories, one level down.
    static func journalFiles(in directory: String) -> [String] {
        var files: [String] = []
        for entry in listing(directory) {
            let path = directory + "/" + entry.name
            if entry.isDirectory {
                files += listing(path).filter { $0.name.hasSuffix(".journal") }.map { path + "/" + $0.name }
            } else if entry.name.hasSuffix(".journal") {
                files.append(path)
            }
        }
        return files
    }

    /// The names in `directory` (hidden ones left out), and which are directories (symbolic links are not).
    static func listing(_ directory: String) -> [(name: String, isDirectory: Bool)] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var found: [(String, Bool)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix(".") else { continue }
            found.append((name, entry.pointee.d_type == UInt8(DT_DIR)))
        }
        return found
    }

    /// Opens the journal with netdevd's matches.
    func open() throws(CommandFailure) -> JournalReader {
        if let directory {
            var status = stat()
            guard stat(directory, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
                throw CommandFailure(status: 1, message: "netdevctl: \(directory) is not a directory of journal files")
            }
        }
        do {
            let reader = try JournalReader(directory: directory)
            try reader.match(anyOf: matches)
            return reader
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: \(error)")
        }
    }

    /// The newest `count` entries since `since`, oldest first.
    func read(_ reader: JournalReader) throws(CommandFailure) -> [JournalRecord] {
        do {
            return try reader.last(count, since: since)
        } catch {
            throw CommandFailure(status: 1, message: "netdevctl: \(error)")
        }
    }

    /// netdevd's entries (its identifier, or its unit: hooks' output included), about the subject if there is one.
    var matches: [[JournalMatch]] {
        let netdevd = [JournalMatch("SYSLOG_IDENTIFIER", "netdevd"), JournalMatch("_SYSTEMD_UNIT", "netdevd.service")]
        guard let subject else { return netdevd.map { [$0] } }
        let about = Self.subjectMatches(subject)
        return about.flatMap { term in netdevd.map { [term, $0] } }
    }

    /// What entries about `subject` carry: a path is a device's (`NETDEVD_DEVPATH`, under /sys); a name is a
    /// link's (`NETDEVD_IFNAME`) and that of each device /sys/class names so.
    static func subjectMatches(_ subject: String, sysfs: String = "/sys") -> [JournalMatch] {
        if subject.hasPrefix("/") {
            let path = subject.hasPrefix("/sys/") ? subject : "/sys" + subject
            return [JournalMatch("NETDEVD_DEVPATH", path)]
        }
        var matches = [JournalMatch("NETDEVD_IFNAME", subject)]
        guard !subject.contains("/"), subject != ".", subject != ".." else { return matches }
        for path in devicePaths(named: subject, sysfs: sysfs)
        where !matches.contains(JournalMatch("NETDEVD_DEVPATH", path)) {
            matches.append(JournalMatch("NETDEVD_DEVPATH", path))
        }
        return matches
    }

    /// The sysfs paths of the devices called `name` in any class (`/sys/class/*/NAME`, resolved).
    static func devicePaths(named name: String, sysfs: String) -> [String] {
        listing(sysfs + "/class").compactMap { entry in
            guard let resolved = realpath("\(sysfs)/class/\(entry.name)/\(name)", nil) else { return nil }
            defer { free(resolved) }
            return String(cString: resolved)
        }.sorted()
    }

    /// One entry as a line: `Nov 26 13:45:01 netdevd[812]: veth0 is routable`, journalctl's short form without the
    /// host name.
    func line(_ record: JournalRecord) -> String {
        let pid = record.value(of: "_PID").map { "[\($0)]" } ?? ""
        return "\(JournalTime.short(record.realtimeMicroseconds)) \(Self.identifier(record))\(pid): "
            + (record.value(of: "MESSAGE") ?? "")
    }

    /// One entry as one JSON object: the time, priority, identifier, message, message id, pid and every NETDEVD_
    /// field.
    func object(_ record: JournalRecord) -> JSONValue {
        var object: [String: JSONValue] = [
            "time": .string(JournalTime.rfc3339(record.realtimeMicroseconds)),
            "realtimeUsec": .number(Double(record.realtimeMicroseconds)),
            "priority": .number(Double(record.priority.rawValue)),
            "identifier": .string(Self.identifier(record)),
            "message": .string(record.value(of: "MESSAGE") ?? ""),
        ]
        if let id = record.value(of: "MESSAGE_ID") { object["messageId"] = .string(id) }
        if let pid = record.value(of: "_PID").flatMap(Double.init) { object["pid"] = .number(pid) }
        for field in record.fields where field.name.hasPrefix("NETDEVD_") && object[field.name] == nil {
            object[field.name] = .string(String(decoding: field.value, as: UTF8.self))
        }
        return .object(object)
    }

    private static func identifier(_ record: JournalRecord) -> String {
        record.value(of: "SYSLOG_IDENTIFIER") ?? record.value(of: "_COMM") ?? "-"
    }
}
