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

extension String {
    /// Whether `part` occurs in the string, byte for byte. (The standard library's `contains(_: String)` lives in
    /// _StringProcessing, which would link the regex engine, about 1 MB, into netdevd for this one use.)
    func containsBytes(_ part: String) -> Bool {
        let whole = Array(utf8)
        let part = Array(part.utf8)
        guard part.count <= whole.count else { return false }
        return (0...(whole.count - part.count)).contains { whole[$0..<$0 + part.count].elementsEqual(part) }
    }
}
