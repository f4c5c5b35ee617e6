/// One netlink message as it sits in a received buffer: its header fields and where its payload is.
struct NetlinkFrame {
    let type: UInt16
    let flags: UInt16
    let sequence: UInt32
    let portID: UInt32
    /// Offset of the payload (after the 16-byte header) in the buffer.
    let payloadOffset: Int
    /// Length of the payload.
    let payloadLength: Int

    /// Offset of the message (its header) in the buffer: where an error about the message as a whole points, since
    /// an empty payload starts where the datagram ends.
    var offset: Int { payloadOffset - Kernel.headerLength }

    /// Splits `bytes` (one datagram, or several concatenated) into messages, checking every length.
    static func split(_ reader: ByteReader) throws(NetlinkParseError) -> [NetlinkFrame] {
        var frames: [NetlinkFrame] = []
        var offset = 0
        let end = reader.count
        while offset < end {
            guard end - offset >= Kernel.headerLength else {
                throw NetlinkParseError(offset: offset, reason: "truncated message header (\(end - offset) bytes)")
            }
            let length = Int(try reader.u32(at: offset))
            guard length >= Kernel.headerLength else {
                throw NetlinkParseError(offset: offset, reason: "message length \(length) is shorter than its header")
            }
            guard length <= end - offset else {
                throw NetlinkParseError(
                    offset: offset,
                    reason: "message length \(length) runs past the end of the buffer (\(end - offset) bytes left)"
                )
            }
            frames.append(
                NetlinkFrame(
                    type: try reader.u16(at: offset + 4),
                    flags: try reader.u16(at: offset + 6),
                    sequence: try reader.u32(at: offset + 8),
                    portID: try reader.u32(at: offset + 12),
                    payloadOffset: offset + Kernel.headerLength,
                    payloadLength: length - Kernel.headerLength
                )
            )
            offset += max(netlinkAligned(length), Kernel.headerLength)
        }
        return frames
    }
}

/// One route attribute (rtattr / nlattr): its type and where its value is.
struct NetlinkAttribute {
    let type: UInt16
    let valueOffset: Int
    let valueLength: Int

    /// The attributes in `[start, start + length)` of the buffer, checking every length.
    static func parse(
        _ reader: ByteReader, from start: Int, length: Int
    ) throws(NetlinkParseError) -> [NetlinkAttribute] {
        let end = start + length
        // Counted first (a link message has about 50), so that the array is made once instead of growing 6 times.
        // The count stops at the first malformed attribute (`try?`): the loop below throws there, naming it.
        var count = 0
        var offset = start
        while end - offset >= 4, let attributeLength = try? Int(reader.u16(at: offset)), attributeLength >= 4 {
            count += 1
            offset += netlinkAligned(attributeLength)
        }
        var attributes: [NetlinkAttribute] = []
        attributes.reserveCapacity(count)
        offset = start
        while end - offset >= 4 {
            let attributeLength = Int(try reader.u16(at: offset))
            let type = try reader.u16(at: offset + 2) & Kernel.NLA_TYPE_MASK
            guard attributeLength >= 4 else {
                throw NetlinkParseError(offset: offset, reason: "attribute length \(attributeLength) is shorter than 4")
            }
            guard attributeLength <= end - offset else {
                throw NetlinkParseError(
                    offset: offset,
                    reason: "attribute \(type) of length \(attributeLength) runs past its message"
                )
            }
            attributes.append(NetlinkAttribute(type: type, valueOffset: offset + 4, valueLength: attributeLength - 4))
            offset += netlinkAligned(attributeLength)
        }
        return attributes
    }

    /// Where the attribute starts (its header), which an error names: its value may be empty at the datagram's end.
    private var headerOffset: Int { valueOffset - 4 }

    func u32(_ reader: ByteReader) throws(NetlinkParseError) -> UInt32 {
        guard valueLength >= 4 else {
            throw NetlinkParseError(offset: headerOffset, reason: "attribute \(type) holds \(valueLength) bytes, not 4")
        }
        return try reader.u32(at: valueOffset)
    }

    func u8(_ reader: ByteReader) throws(NetlinkParseError) -> UInt8 {
        guard valueLength >= 1 else {
            throw NetlinkParseError(offset: headerOffset, reason: "attribute \(type) is empty")
        }
        return try reader.u8(at: valueOffset)
    }

    func bytes(_ reader: ByteReader) throws(NetlinkParseError) -> ArraySlice<UInt8> {
        try reader.slice(valueOffset, valueLength)
    }

    /// A NUL-terminated string value (the NUL, and anything after it, dropped).
    func string(_ reader: ByteReader) throws(NetlinkParseError) -> String {
        let raw = try bytes(reader)
        let text = raw.prefix { $0 != 0 }
        return String(decoding: text, as: UTF8.self)
    }
}
