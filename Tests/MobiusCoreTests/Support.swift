import Dispatch
import Foundation
import KernelTestSupport
import MobiusCore

/// A thread-safe list of what happened, in the order it happened.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Protected<[Value]>([])

    func record(_ value: Value) {
        values.withLock { $0.append(value) }
    }

    var all: [Value] {
        values.withLock { $0 }
    }

    var count: Int {
        values.withLock { $0.count }
    }
}

/// Waits (polling) until `condition` holds or `timeout` passes; returns whether it held.
func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

/// Waits (polling, without blocking a thread of the concurrency pool) until `condition` holds or `timeout`
/// passes; returns whether it held. Tests that need tasks to run use this one.
///
/// The budget is counted in this task's own turns (`timeout` seconds of 1 ms sleeps), not on the wall clock: when
/// other tests block the concurrency pool's threads (two on a 2-core machine, slower still under ThreadSanitizer),
/// this task and the ones it waits for are held back alike, and a wall-clock deadline would pass while neither ran.
func eventually(timeout: Double = 5, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<Int(timeout * 1000) {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

/// Waits until every block queued so far on `queue` has run.
func drain(_ queue: DispatchQueue) {
    queue.sync {}
}

private let misuseGate = DispatchQueue(label: "misuse checks, one at a time")

/// Runs `body` on a thread of its own with a recording ``MobiusHooks`` error handler installed, and returns the
/// message reported, or `nil` when `body` finishes without a misuse.
///
/// The error handler must not return, so the thread that reports a misuse is parked for good; each misuse test
/// uses objects of its own, so nothing else waits on that thread. Misuse checks run one at a time because the
/// error handler is process-wide.
func misuseMessage(of body: @escaping @Sendable () -> Void) -> String? {
    misuseGate.sync {
        let reported = Protected<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        MobiusHooks.setErrorHandler { message, _, _ in
            reported.withLock { $0 = message }
            done.signal()
            while true {
                sleep(3600)
            }
        }
        defer { MobiusHooks.setDefaultErrorHandler() }
        Thread.detachNewThread {
            body()
            done.signal()
        }
        done.wait()
        return reported.withLock { $0 }
    }
}
