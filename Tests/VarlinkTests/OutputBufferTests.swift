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
}
