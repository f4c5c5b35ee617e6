import Dispatch
import Foundation
import Locking
import Testing

@testable import NetdevDaemon

/// The poller hands every readiness of a registered descriptor to its queue, again after each handler, never
/// after `unregister`; its timers fire once per deadline, and a later deadline or a disarm replaces the earlier.
@Suite("Poller and PollerTimer")
struct PollerTests {
    /// Waits until `condition` holds, up to `seconds`; the condition's last value.
    func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() && Date() < deadline { usleep(2_000) }
        return condition()
    }

    @Test("each write to a registered pipe runs the handler on its queue; none after unregister")
    func pipeReadiness() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        let queue = DispatchQueue(label: "poller-test")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let received = Locked<[UInt8]>([])
        let offQueue = Locked(0)
        let reader = ends[0]
        let poller = try #require(Poller.shared)
        let token = try #require(
            poller.register(reader, queue: queue) {
                if DispatchQueue.getSpecific(key: key) != true { offQueue.withLock { $0 += 1 } }
                var byte: UInt8 = 0
                while read(reader, &byte, 1) == 1 { received.withLock { $0.append(byte) } }
            })
        for value in UInt8(1)...3 {
            var byte = value
            #expect(write(ends[1], &byte, 1) == 1)
            // One at a time: the descriptor must be armed again after each handler, or the second never arrives.
            #expect(eventually { received.withLock { $0.count } == Int(value) })
        }
        #expect(received.withLock { $0 } == [1, 2, 3])
        queue.sync { poller.unregister(token) }
        var byte: UInt8 = 4
        #expect(write(ends[1], &byte, 1) == 1)
        // A marker written after the byte, on the same poller and queue: once its handler has run, a handler for
        // the byte (readable first) would have run before it.
        #expect(Self.marker(on: poller, queue: queue))
        #expect(received.withLock { $0 } == [1, 2, 3])
        #expect(offQueue.withLock { $0 } == 0)
    }

    @Test("a timer fires once at its deadline; a later schedule or a disarm replaces the earlier deadline")
    func timerDeadlines() throws {
        let queue = DispatchQueue(label: "poller-timer-test")
        let fired = Locked<[UInt64]>([])
        let timer = try #require(PollerTimer(queue: queue) { fired.withLock { $0.append(PollerTimer.now()) } })

        // A second timer on the same queue, due after every deadline the first must not fire at: once it has fired,
        // a wrong firing of the first would have come before it.
        let markerFired = Locked(0)
        let marker = try #require(PollerTimer(queue: queue) { markerFired.withLock { $0 += 1 } })
        func markerFires() -> Bool {
            let before = markerFired.withLock { $0 }
            marker.schedule(atUptimeNanoseconds: PollerTimer.now() + 100_000_000)
            return eventually { markerFired.withLock { $0 } == before + 1 } && queue.sync { true }
        }

        let start = PollerTimer.now()
        timer.schedule(atUptimeNanoseconds: start + 20_000_000)
        #expect(eventually { fired.withLock { $0.count } == 1 })
        #expect(try #require(fired.withLock { $0.first }) >= start + 20_000_000)
        #expect(markerFires())
        #expect(fired.withLock { $0.count } == 1, "a one-shot timer fires once")

        timer.schedule(atUptimeNanoseconds: PollerTimer.now() + 20_000_000)
        timer.disarm()
        timer.schedule(atUptimeNanoseconds: PollerTimer.now() + 10_000_000)
        timer.schedule(atUptimeNanoseconds: PollerTimer.now() + 10_000_000_000)
        #expect(markerFires())
        #expect(fired.withLock { $0.count } == 1, "disarmed, then moved 10 s on: nothing yet")

        timer.schedule(atUptimeNanoseconds: 0)
        #expect(eventually { fired.withLock { $0.count } == 2 }, "a deadline in the past fires at once")

        timer.schedule(atUptimeNanoseconds: PollerTimer.now() + 20_000_000)
        timer.disarm()
        #expect(markerFires())
        #expect(fired.withLock { $0.count } == 2, "disarmed: the deadline set before does not fire")
    }

    @Test("a readiness already queued when its registration is removed does not reach the handler")
    func unregisterWithReadinessQueued() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let queue = DispatchQueue(label: "poller-unregister-test")
        let calls = Locked(0)
        let poller = try #require(Poller.shared)
        let token = try #require(poller.register(ends[0], queue: queue) { calls.withLock { $0 += 1 } })
        let done = DispatchSemaphore(value: 0)
        let writer = ends[1]
        let markerSeen = Locked(false)
        queue.async {
            // The queue is busy: the poller queues the readiness behind this block, which then unregisters. A marker
            // written after the byte, handled on another queue, says when the poller has seen the byte's readiness.
            var byte: UInt8 = 1
            _ = write(writer, &byte, 1)
            markerSeen.withLock { $0 = Self.marker(on: poller, queue: DispatchQueue(label: "poller-marker")) }
            poller.unregister(token)
        }
        queue.async { done.signal() }
        #expect(done.wait(timeout: .now() + 5) == .success)
        queue.sync {}
        #expect(markerSeen.withLock { $0 }, "the poller never saw the marker")
        #expect(calls.withLock { $0 } == 0)
    }

    /// Writes to a fresh pipe registered on `poller` with `queue`, and waits (up to 5 s) until its handler has run
    /// there: every readiness the poller saw before it has been handed to its queue by then.
    static func marker(on poller: Poller, queue: DispatchQueue) -> Bool {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return false }
        defer {
            close(ends[0])
            close(ends[1])
        }
        let ran = DispatchSemaphore(value: 0)
        let reader = ends[0]
        let registered = poller.register(reader, queue: queue) {
            var byte: UInt8 = 0
            if read(reader, &byte, 1) == 1 { ran.signal() }
        }
        guard let token = registered else { return false }
        var byte: UInt8 = 0
        let handled = write(ends[1], &byte, 1) == 1 && ran.wait(timeout: .now() + 5) == .success
        queue.sync { poller.unregister(token) }
        return handled
    }
}
