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
