import Dispatch
import Foundation
import Locking
import Testing

@testable import NetdevDaemon

/// A monitor read while messages stream in waits its hold-off before it is watched again, so that what arrives
/// meanwhile is read in one go; a readiness after a quiet spell, or after a read that stopped at its limit, is read
/// at once.
@Suite("Hold-off of the kernel's monitors")
struct HoldOffTests {
    /// A non-blocking pipe, closed when the test ends.
    final class Pipe: Sendable {
        let reader: Int32
        let writer: Int32

        init() throws {
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0)
            reader = ends[0]
            writer = ends[1]
            _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK)
        }

        deinit {
            close(reader)
            close(writer)
        }

        func write() -> Bool {
            var byte: UInt8 = 1
            return Glibc.write(writer, &byte, 1) == 1
        }

        /// Reads what is pending; the bytes read.
        func drain() -> Int {
            var buffer = [UInt8](repeating: 0, count: 64)
            var total = 0
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(reader, $0.baseAddress, $0.count) }
                guard count > 0 else { return total }
                total += count
            }
        }
    }

    /// Waits until `calls` has `count` entries, up to `seconds`; whether it has.
    func wait(for count: Int, in calls: Locked<[UInt64]>, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while calls.withLock({ $0.count }) < count && Date() < deadline { usleep(2_000) }
        return calls.withLock { $0.count } >= count
    }

    @Test("a handler that asks for the hold-off is not run again before it has passed; one that does not, at once")
    func pollerHoldsOff() throws {
        let holdOff: UInt64 = 1_000_000_000
        let poller = try #require(Poller.shared)
        for asks in [true, false] {
            let pipe = try Pipe()
            let calls = Locked<[UInt64]>([])
            let queue = DispatchQueue(label: "hold-off-test")
            let token = try #require(
                poller.registerHoldingOff(pipe.reader, queue: queue) {
                    _ = pipe.drain()
                    calls.withLock { $0.append(PollerTimer.now()) }
                    return asks ? holdOff : 0
                })
            defer { queue.sync { poller.unregister(token) } }
            #expect(pipe.write())
            #expect(wait(for: 1, in: calls))
            let written = PollerTimer.now()
            #expect(pipe.write())
            #expect(wait(for: 2, in: calls))
            let second = calls.withLock { $0[1] }
            if asks {
                #expect(second >= calls.withLock { $0[0] } + holdOff, "read again within the hold-off")
            } else {
                #expect(second < written + holdOff / 2, "held off though the handler did not ask")
            }
        }
    }

    @Test("a monitor's reads: at once after a quiet spell or a read cut at its limit, held off while streaming")
    func sourceHoldsOffWhileStreaming() throws {
        let holdOff = Duration.seconds(1)
        let nanoseconds: UInt64 = 1_000_000_000
        let pipe = try Pipe()
        let reads = Locked<[UInt64]>([])
        // The read that is told it stopped at its limit (the 4th).
        let cutRead = 4
        let source = ReadableEventSource(
            fileDescriptor: pipe.reader, queue: DispatchQueue(label: "hold-off-source-test"), holdOff: holdOff,
            failure: .monitorOverflowed(source: .netlink), problem: { _ in }
        ) { _ in
            _ = pipe.drain()
            let count = reads.withLock { reads in
                reads.append(PollerTimer.now())
                return reads.count
            }
            return ReadableEventSource.Reading(drained: count != cutRead)
        }
        let subscription = source.subscribe { _ in }
        defer { subscription.dispose() }

        // 1: the first read, after a quiet spell: at once.
        var written = PollerTimer.now()
        #expect(pipe.write())
        #expect(wait(for: 1, in: reads))
        #expect(reads.withLock { $0[0] } < written + nanoseconds / 2)
        // 2: within two hold-offs of the first, but the first was not streaming: watched again at once.
        written = PollerTimer.now()
        #expect(pipe.write())
        #expect(wait(for: 2, in: reads))
        #expect(reads.withLock { $0[1] } < written + nanoseconds / 2)
        // 3: the second read was streaming, so the third waits the hold-off after it.
        #expect(pipe.write())
        #expect(wait(for: 3, in: reads))
        #expect(reads.withLock { $0[2] } >= reads.withLock { $0[1] } + nanoseconds)
        // 4: streaming again, held off; that read stops at its limit, so the 5th is read at once.
        #expect(pipe.write())
        #expect(wait(for: 4, in: reads))
        #expect(reads.withLock { $0[3] } >= reads.withLock { $0[2] } + nanoseconds)
        written = PollerTimer.now()
        #expect(pipe.write())
        #expect(wait(for: 5, in: reads))
        #expect(reads.withLock { $0[4] } < written + nanoseconds / 2)
        // 6: after a quiet spell longer than two hold-offs, at once again.
        usleep(2_500_000)
        written = PollerTimer.now()
        #expect(pipe.write())
        #expect(wait(for: 6, in: reads))
        #expect(reads.withLock { $0[5] } < written + nanoseconds / 2)
    }

    @Test(
        "a hold-off doubles after each streaming read that found few events, up to the longest, and shrinks or resets"
    )
    func holdOffGrowth() {
        let holdOff = ReadableEventSource.HoldOff(shortest: 30, longest: 240)
        var held: UInt64 = 30
        var sequence: [UInt64] = []
        for _ in 0..<5 {
            held = holdOff.next(after: held, streaming: true, events: 3)
            sequence.append(held)
        }
        #expect(sequence == [60, 120, 240, 240, 240])
        #expect(holdOff.next(after: 240, streaming: true, events: ReadableEventSource.HoldOff.fewEvents) == 240)
        #expect(holdOff.next(after: 240, streaming: true, events: 200) == 120, "a full read halves it")
        #expect(holdOff.next(after: 60, streaming: true, events: 200) == 30)
        #expect(holdOff.next(after: 30, streaming: true, events: 200) == 30, "never below the shortest")
        #expect(holdOff.next(after: 240, streaming: false, events: 1) == 30, "a quiet spell resets it")
        #expect(ReadableEventSource.HoldOff.nanoseconds(.milliseconds(-5)) == 0)
        #expect(ReadableEventSource.HoldOff.nanoseconds(.milliseconds(240)) == 240_000_000)
    }

    @Test("messages that keep trickling in are read further and further apart, up to the longest hold-off")
    func sourceHoldOffGrows() throws {
        let shortest: UInt64 = 100_000_000
        let longest: UInt64 = 400_000_000
        let pipe = try Pipe()
        let reads = Locked<[UInt64]>([])
        let source = ReadableEventSource(
            fileDescriptor: pipe.reader, queue: DispatchQueue(label: "hold-off-growth-test"),
            holdOff: .milliseconds(100), longestHoldOff: .milliseconds(400),
            failure: .monitorOverflowed(source: .netlink), problem: { _ in }
        ) { _ in
            _ = pipe.drain()
            reads.withLock { $0.append(PollerTimer.now()) }
            return ReadableEventSource.Reading(drained: true)
        }
        let subscription = source.subscribe { _ in }
        defer { subscription.dispose() }
        // A byte every 20 ms until the 7th read.
        while reads.withLock({ $0.count }) < 7 {
            #expect(pipe.write())
            usleep(20_000)
        }
        let times = reads.withLock { $0 }
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        // The 2nd read follows a quiet spell's, at once; then 100, 200, 400, 400 ms.
        #expect(gaps[1] >= shortest && gaps[2] >= 2 * shortest, "\(gaps)")
        #expect(gaps[3] >= longest && gaps[4] >= longest, "\(gaps)")
        #expect(gaps[5] < 2 * longest, "grew past the longest hold-off: \(gaps)")
        // A quiet spell longer than the longest hold-off and the shortest: read at once, not 400 ms later.
        usleep(700_000)
        let written = PollerTimer.now()
        #expect(pipe.write())
        #expect(wait(for: times.count + 1, in: reads))
        #expect(reads.withLock { $0[times.count] } < written + longest / 2)
    }

    @Test("the main thread's list of held-off descriptors: epoll's timeout rounded up, and only those due armed")
    func heldOffBookkeeping() {
        var heldOff = HeldOff()
        #expect(heldOff.isEmpty)
        #expect(heldOff.millisecondsToNext() == -1)
        let now = PollerTimer.now()
        heldOff.add(7, due: now + 40_000_000)
        heldOff.add(8, due: now + 3_600_000_000_000)
        let timeout = heldOff.millisecondsToNext()
        #expect(timeout > 0 && timeout <= 40, "\(timeout) ms to a descriptor due in 40 ms")
        var armed: [UInt64] = []
        heldOff.armDue { armed.append($0) }
        #expect(armed.isEmpty, "armed before its time")
        usleep(50_000)
        #expect(heldOff.millisecondsToNext() == 0, "a descriptor past its time")
        heldOff.armDue { armed.append($0) }
        #expect(armed == [7])
        #expect(heldOff.millisecondsToNext() > 3_500_000, "an armed descriptor still counted")
        heldOff.add(9, due: now)
        #expect(heldOff.millisecondsToNext() == 0)
    }
}
