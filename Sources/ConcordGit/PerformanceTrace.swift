import Foundation
import Synchronization

/// With `CONCORD_TRACE_PERF=1` in the environment, the steps of `concord import` and `concord put`
/// (and of any write of records) are printed to stderr as they end, each with the wall time and this thread's CPU time since
/// the step before, e.g. `concord perf: 21.4 ms (cpu 21.0 ms) dump read`. For finding where a slow
/// command spends its time, as git's `GIT_TRACE_PERFORMANCE` is. Without the variable a step
/// costs one load and a branch.
package enum PerformanceTrace {
    private static let enabled: Bool = getenv("CONCORD_TRACE_PERF").map { String(cString: $0) }.map { !$0.isEmpty && $0 != "0" } ?? false
    /// When the last step ended (nil before the first).
    private static let last = Mutex<(wall: Double, cpu: Double)?>(nil)

    /// Reports that step `name` has just ended (on the thread that runs the command).
    package static func step(_ name: @autoclosure () -> String) {
        guard enabled else { return }
        let now = (wall: clock(CLOCK_MONOTONIC), cpu: clock(CLOCK_THREAD_CPUTIME_ID))
        let previous = last.withLock { last in
            defer { last = now }
            return last ?? (now.wall, now.cpu)
        }
        let line = "concord perf: \(milliseconds(now.wall - previous.wall)) (cpu \(milliseconds(now.cpu - previous.cpu))) \(name())\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    /// Starts the clock: the next step is timed from here.
    package static func start() {
        guard enabled else { return }
        let now = (wall: clock(CLOCK_MONOTONIC), cpu: clock(CLOCK_THREAD_CPUTIME_ID))
        last.withLock { $0 = now }
    }

    private static func clock(_ id: clockid_t) -> Double {
        var time = timespec()
        clock_gettime(id, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000
    }

    private static func milliseconds(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}
