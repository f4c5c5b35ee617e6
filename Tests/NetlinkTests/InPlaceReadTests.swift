import Testing

@testable import Netlink

/// The watcher parses each datagram where the socket received it: in a buffer that still holds the bytes of
/// earlier, longer datagrams after the current one.
@Suite("Netlink datagrams read in place")
struct InPlaceReadTests {
    @Test("a datagram read in place ends at its length: the stale bytes after it are never parsed")
    func staleBytesIgnored() throws {
        let current = try fixture("newaddr4.bin")
        let earlier = try fixture("newlink.bin")
        #expect(earlier.count > current.count)
        // The buffer after receiving `earlier`, then `current` over its start.
        var buffer = earlier + [UInt8](repeating: 0xA5, count: 64)
        buffer.replaceSubrange(0..<current.count, with: current)
        let inPlace = try RouteMessageParser.parseBuffer(ByteReader(bytes: buffer, count: current.count))
        #expect(inPlace.messages == (try RouteMessageParser.parse(current)))
        #expect(inPlace.messages.count == 1)
    }

    @Test("a message whose length runs past the datagram's end is an error, though the buffer goes on")
    func lengthPastDatagram() throws {
        let current = try fixture("newaddr4.bin")
        var buffer = current + [UInt8](repeating: 0, count: 4096)
        buffer.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(current.count + 8), toByteOffset: 0, as: UInt32.self) }
        #expect(
            throws: NetlinkParseError(
                offset: 0,
                reason:
                    "message length \(current.count + 8) runs past the end of the buffer (\(current.count) bytes left)")
        ) {
            try RouteMessageParser.parseBuffer(ByteReader(bytes: buffer, count: current.count))
        }
    }

    @Test("datagrams appended to the watcher's kept array follow what it holds; a malformed one appends nothing")
    func appendedToKeptArray() throws {
        let address = try fixture("newaddr4.bin")
        let link = try fixture("newlink.bin")
        var messages = try RouteMessageParser.parse(link)
        let held = messages
        try RouteMessageParser.appendMessages(in: ByteReader(bytes: address + link), to: &messages)
        #expect(messages == held + (try RouteMessageParser.parse(address)) + held)
        let before = messages
        // A good address message, then one whose first attribute overruns it: the datagram's frames are whole, the
        // second message is not, and neither is appended.
        var overrun = address
        overrun.withUnsafeMutableBytes { $0.storeBytes(of: UInt16(200), toByteOffset: 24, as: UInt16.self) }
        #expect(throws: NetlinkParseError.self) {
            try RouteMessageParser.appendMessages(in: ByteReader(bytes: address + overrun), to: &messages)
        }
        #expect(messages == before)
    }
}
