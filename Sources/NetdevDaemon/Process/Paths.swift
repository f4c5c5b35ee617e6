#if canImport(Glibc)
import Glibc
#endif

/// Path arithmetic and directory creation shared by the control socket, the metrics file and the hook directories.
enum Paths {
    /// The directory part of `path` (`.` when it has none, `/` for a file in the root).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Creates `path` and its missing parents (mode 0755); returns what went wrong, in words, or `nil`.
    static func makeDirectories(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                return "cannot create \(prefix): \(String(cString: strerror(errno)))"
            }
        }
        return nil
    }
}
