import Dispatch
import Locking
import MobiusCore
import NetdevSession
import SystemSupport

/// The session's timers: one Dispatch timer per ``TimerID``; starting one that runs restarts it.
final class Timers: Sendable {
    private let queue: DispatchQueue
    private let running = Locked<[TimerID: DispatchSourceHandle]>([:])

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    func start(_ id: TimerID, milliseconds: Int, fire: @escaping @Sendable (TimerID) -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(milliseconds))
        let handle = DispatchSourceHandle(timer)
        timer.setEventHandler { [weak self] in
            let current = self?.running.withLock { running -> Bool in
                guard running[id] === handle else { return false }
                running[id] = nil
                return true
            }
            // A fired one-shot source stays registered with Dispatch until it is cancelled.
            handle.cancel()
            if current == true {
                fire(id)
            }
        }
        // Registered before it is armed: a 0 ms timer can fire before `resume()` returns.
        running.withLock { running in
            running[id]?.cancel()
            running[id] = handle
        }
        timer.resume()
    }

    func cancel(_ id: TimerID) {
        running.withLock { $0.removeValue(forKey: id) }?.cancel()
    }

    func cancelAll() {
        for handle in running.withLock({ running in
            defer { running = [:] }; return Array(running.values)
        }) {
            handle.cancel()
        }
    }
}
