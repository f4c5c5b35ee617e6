/// Bounds-checked reads of native-endian integers from the first `count` bytes of a buffer (netlink uses the
/// host's byte order). Nothing at or past `count` is read: a socket's receive buffer is read in place.
struct ByteReader {
    let bytes: [UInt8]
    /// How many bytes of `bytes` hold data.
    let count: Int

    /// Reads all of `bytes`.
    init(bytes: [UInt8]) {
        self.init(bytes: bytes, count: bytes.count)
    }

    /// Reads the first `count` bytes of `bytes` (at most all of them).
    init(bytes: [UInt8], count: Int) {
        self.bytes = bytes
        self.count = min(max(0, count), bytes.count)
    }

    func u8(at offset: Int) throws(NetlinkParseError) -> UInt8 {
        try check(offset, 1)
        return bytes[offset]
    }

    func u16(at offset: Int) throws(NetlinkParseError) -> UInt16 {
        try check(offset, 2)
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt16.self) }
    }

    func u32(at offset: Int) throws(NetlinkParseError) -> UInt32 {
        try check(offset, 4)
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
    }

    func i32(at offset: Int) throws(NetlinkParseError) -> Int32 {
        Int32(bitPattern: try u32(at: offset))
    }

    func slice(_ offset: Int, _ count: Int) throws(NetlinkParseError) -> ArraySlice<UInt8> {
        try check(offset, count)
        return bytes[offset..<offset + count]
    }

    private func check(_ offset: Int, _ count: Int) throws(NetlinkParseError) {
        guard offset >= 0, count >= 0, offset <= self.count - count else {
            throw NetlinkParseError(
                offset: offset,
                reason: "needs \(count) bytes but the buffer has \(max(0, self.count - max(0, offset))) left"
            )
        }
    }
}

/// Rounds `length` up to netlink's 4-byte alignment.
func netlinkAligned(_ length: Int) -> Int {
    (length + 3) & ~3
}
