import KernelTestSupport
import Testing

@testable import Varlink

@Suite("Replies waiting to be written")
struct OutputBufferTests {
    @Test("random appends and partial writes come out whole and in order, and a drained buffer lets its storage go")
    func partialWrites() {
        var generator = SeededGenerator(seed: 0x6275_6666)
        var buffer = OutputBuffer()
        var sent: [UInt8] = []
        var expected: [UInt8] = []
        var next: UInt8 = 0
        for _ in 0..<2_000 {
            if Bool.random(using: &generator) {
                let more = (0..<Int.random(in: 0...5_000, using: &generator)).map { _ in
                    defer { next &+= 1 }
                    return next
                }
                expected += more
                buffer.append(more)
            }
            let room = Int.random(in: -1...3_000, using: &generator)
            let before = buffer.count
            let written = buffer.write { bytes in
                guard room > 0 else { return room }
                let taken = min(room, bytes.count)
                sent += bytes.prefix(taken)
                return taken
            }
            #expect(buffer.count == before - max(0, min(written, before)))
        }
        while !buffer.isEmpty {
            _ = buffer.write { bytes in
                sent += bytes
                return bytes.count
            }
        }
        #expect(sent == expected)
        #expect(buffer.count == 0)
    }

    @Test("dropping the messages not begun leaves the one being written whole, then what is appended after")
    func dropUnbegun() {
        var generator = SeededGenerator(seed: 0x6472_6f70)
        for _ in 0..<200 {
            var buffer = OutputBuffer()
            var sent: [UInt8] = []
            var messages: [[UInt8]] = []
            for number in 0..<Int.random(in: 1...20, using: &generator) {
                // A message: its number, some filler, and Varlink's NUL.
                let message =
                    Array("\(number):".utf8)
                    + [UInt8](repeating: 0x61, count: Int.random(in: 0...300, using: &generator))
                    + [0]
                messages.append(message)
                buffer.append(message)
                let room = Int.random(in: 0...400, using: &generator)
                _ = buffer.write { bytes in
                    let taken = min(room, bytes.count)
                    sent += bytes.prefix(taken)
                    return taken
                }
            }
            // The messages begun: those starting before the bytes written so far.
            var start = 0
            var begun = 0
            for message in messages where start < sent.count {
                begun += 1
                start += message.count
            }
            buffer.dropUnbegunMessages()
            buffer.append(Array("error".utf8) + [0])
            while !buffer.isEmpty {
                _ = buffer.write { bytes in
                    sent += bytes.prefix(7)
                    return min(7, bytes.count)
                }
            }
            let received = sent.split(separator: 0, omittingEmptySubsequences: false).dropLast().map(Array.init)
            #expect(received.last == Array("error".utf8))
            let expected = messages.prefix(begun).map { Array($0.dropLast()) }
            #expect(Array(received.dropLast()) == expected, "\(received.count - 1) messages read, \(begun) begun")
        }
    }
}
