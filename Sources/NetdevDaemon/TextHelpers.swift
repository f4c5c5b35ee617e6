#if canImport(Glibc)
import Glibc
#endif

extension StringProtocol {
    /// Without leading and trailing whitespace (spaces, tabs, and line ends, so a CRLF file's `\r` goes too).
    var trimmed: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = lastIndex(where: { !$0.isWhitespace })!
        return String(self[first...last])
    }
}
