#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to standard error, whole (retrying short and interrupted writes). A failure is ignored: standard
/// error is where failures are reported, so there is nowhere left to report it, and unlike Foundation's
/// `FileHandle.write` it never traps.
public func writeToStandardError(_ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        bytes = bytes.dropFirst(written)
    }
}

extension StringProtocol {
    /// Without leading and trailing whitespace (spaces, tabs, and line ends, so a CRLF file's `\r` goes too).
    var trimmed: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = lastIndex(where: { !$0.isWhitespace })!
        return String(self[first...last])
    }
}
