#if canImport(Glibc)
import Glibc
#endif

/// Reading the text files netdevd is given (its configuration, a recording): whole, with a size bound, every
/// failure said with the system's reason, and split into lines the way editors on any system write them.
enum TextFile {
    /// Why a file could not be read, in words ("Permission denied", "is larger than 1 MiB").
    struct Problem: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// The bytes of the file at `path`, at most `limit` of them (more is a ``Problem``, not a truncation).
    static func bytes(at path: String, limit: Int) -> Result<[UInt8], Problem> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(Problem(description: String(cString: strerror(errno)))) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return .failure(Problem(description: String(cString: strerror(errno)))) }
            if count == 0 { return .success(bytes) }
            guard bytes.count + count <= limit else {
                return .failure(Problem(description: "is larger than \(limit >> 20) MiB"))
            }
            bytes += buffer[..<count]
        }
    }

    /// The lines of `text`: split at `\n`, `\r\n` and a lone `\r`; a UTF-8 byte order mark at the start is dropped.
    /// Line numbers (index + 1) are the ones an editor shows.
    static func lines(_ text: String) -> [Substring] {
        var text = Substring(text)
        if text.first == "\u{FEFF}" { text = text.dropFirst() }
        // Swift reads "\r\n" as one Character, so splitting at "\n" alone would leave a CRLF file one long line.
        return text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
    }

    /// The names in `directory` (without `.` and `..`); `nil` when it does not exist, a ``Problem`` when it exists
    /// but cannot be listed.
    static func names(in directory: String) -> Result<[String]?, Problem> {
        guard let stream = opendir(directory) else {
            if errno == ENOENT { return .success(nil) }
            return .failure(Problem(description: String(cString: strerror(errno))))
        }
        defer { closedir(stream) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { return .failure(Problem(description: String(cString: strerror(errno)))) }
                return .success(names)
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }
}
