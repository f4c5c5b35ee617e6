/// Why a netlink message could not be read: what was wrong and where, so a bug report can point at the byte.
///
/// The parser checks every length against the bytes it has before reading; malformed or truncated input from
/// the kernel (or a test) becomes this error, never a crash or an out-of-bounds read.
public struct NetlinkParseError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The offset, from the start of the buffer handed to the parser, of the structure that is wrong.
    public let offset: Int
    /// What is wrong there.
    public let reason: String

    /// An error at `offset` for `reason`.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    /// `netlink: <reason> at offset <n>`.
    public var description: String {
        "netlink: \(reason) at offset \(offset)"
    }
}
