import Dispatch
import Foundation
import Locking
import NetdevSession
import NetdevWire
import Testing

@testable import NetdevDaemon

/// While the kernel streams, the monitors are sent what piled up at longer and longer intervals, so that each send
/// (a wake-up of the monitors' queue and of every client) carries more; after a quiet spell a change goes at once.
@Suite("Pacing of the sends to monitors")
struct MonitorPacingTests {
    static let millisecond: UInt64 = 1_000_000

    @Test("a change after a quiet spell goes at once; each send a change waited for doubles the wait up to the longest")
    func doublesAndResets() {
        let ms = Self.millisecond
        var pacing = MonitorPacing(shortestMilliseconds: 50, longestMilliseconds: 250)
        // The first change ever goes at once.
        #expect(pacing.sendTime(publishedAt: 1_000 * ms) == 1_000 * ms)
        pacing.sent(at: 1_000 * ms)
        // Changes keep coming: each waits for the interval after the last send, which then doubles.
        var sends: [UInt64] = [1_000 * ms]
        for _ in 0..<6 {
            let due = pacing.sendTime(publishedAt: sends.last! + 10 * ms)
            sends.append(due)
            pacing.sent(at: due)
        }
        #expect(zip(sends.dropFirst(), sends).map { ($0 - $1) / ms } == [50, 100, 200, 250, 250, 250])
        // The same while the interval is not yet the longest: at once, and the interval stays 100 ms.
        var growing = MonitorPacing(shortestMilliseconds: 50, longestMilliseconds: 250)
        growing.sent(at: 0)
        #expect(growing.sendTime(publishedAt: 10 * ms) == 50 * ms)
        growing.sent(at: 50 * ms)
        #expect(growing.sendTime(publishedAt: 170 * ms) == 170 * ms)
        growing.sent(at: 170 * ms)
        #expect(growing.sendTime(publishedAt: 180 * ms) == 270 * ms)
        // A change that comes after the interval, but before a quiet spell, goes at once; the interval stays.
        let late = sends.last! + 260 * ms
        #expect(pacing.sendTime(publishedAt: late) == late)
        pacing.sent(at: late)
        #expect(pacing.sendTime(publishedAt: late + 10 * ms) == late + 250 * ms)
        pacing.sent(at: late + 250 * ms)
        // Quiet for the interval and the shortest: at once, and the next waits the shortest again.
        let quiet = late + 250 * ms + 300 * ms
        #expect(pacing.sendTime(publishedAt: quiet) == quiet)
        pacing.sent(at: quiet)
        #expect(pacing.sendTime(publishedAt: quiet + 1 * ms) == quiet + 50 * ms)
    }

    @Test("changes that keep coming go to a monitor in sends further and further apart, and a quiet spell ends that")
    func sendsSpreadWhileStreaming() throws {
        let sends = Locked<[UInt64]>([])
        let served = try ServedControl(batchSent: {
            sends.withLock { $0.append(DispatchTime.now().uptimeNanoseconds) }
        })
        defer { withExtendedLifetime(served) {} }
        let (connection, models, monitor) = served.monitoredStream(models: 243, seed: 13)
        defer {
            connection.dispose()
            close(monitor.fd)
        }
        let deadline = Date().addingTimeInterval(20)
        // A change every 5 ms for 1.2 s.
        let began = DispatchTime.now().uptimeNanoseconds
        for model in models[1..<241] {
            connection.accept(model)
            usleep(5_000)
        }
        let published = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
        while !monitor.hasSequence(241) && Date() < deadline { usleep(1_000) }
        let streamed = sends.withLock { $0 }.filter { $0 >= began }
        let gaps = zip(streamed.dropFirst(), streamed).map { Double($0 - $1) / 1e6 }
        // Every 50 ms that would be a send per 50 ms of the stream; growing to 250 ms, about one per 250 ms (8 for
        // 1.2 s), however long a loaded machine takes to publish.
        #expect(streamed.count <= Int(published / 0.25) + 5, "\(streamed.count) sends in \(published) s: \(gaps) ms")
        #expect(gaps.contains { $0 >= 240 }, "no send waited the longest interval: \(gaps) ms apart")

        // Quiet for longer than the longest interval and the shortest: the first change goes at once, and one right
        // after it 50 ms later.
        usleep(UInt32(ControlService.monitorLongestSendIntervalMilliseconds + 250) * 1_000)
        let before = sends.withLock { $0.count }
        connection.accept(models[241])
        while sends.withLock({ $0.count }) < before + 1 && Date() < deadline { usleep(1_000) }
        connection.accept(models[242])
        while sends.withLock({ $0.count }) < before + 2 && Date() < deadline { usleep(1_000) }
        let after = sends.withLock { $0 }.dropFirst(before)
        #expect(after.count == 2, "\(after.count) sends for two changes after a quiet spell")
        if after.count == 2 {
            let gap = Double(after.last! - after.first!) / 1e6
            #expect(gap < 200, "the second change after a quiet spell waited \(gap) ms, as if the stream went on")
        }
        while !monitor.hasSequence(models.count) && Date() < deadline { usleep(1_000) }
        #expect(monitor.decoded().sequences == Array(1...models.count))
        #expect(monitor.decoded().state == StateReport(models[models.count - 1], devices: true))
    }
}
