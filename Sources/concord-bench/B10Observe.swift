import ConcordKit
import Foundation

/// B10 (observe): how soon `ConcordStore.observe` hands an app's observer a local write: the time
/// from the write's return to the observer's receipt of the value that holds it, in-process, in a
/// profile of `records` vocabulary records. No git counterpart (git has no change notification).
enum ObserveBenchmark {
    static let records = 1_000
    static let writes = 200
    /// The bound of the issue: p95 ≤ 5 ms.
    static let p95Target = 0.005

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let home = context.path("home")
        let identity = try Identity.create(member: "alice", device: "bench", in: home)
        let store = try ConcordStore.create(at: context.path("profile"), name: "B10 observe", template: .aac, identity: identity,
                                            environment: ConcordEnvironment(home: home))
        try store.write { transaction in
            for index in 0..<records { try transaction.put("vocabulary", "r\(index)", data: ["n": .number(String(index))]) }
        }
        context.progress("B10 observe: \(writes) writes, each awaited by an observer of the kind")
        // The observer reads one record, the one each write changes: the latency measured is the
        // watcher's and the store queue's, not a scan's.
        let request = ClosureRequest(kinds: ["vocabulary"]) { reader -> Int in
            try reader.get("vocabulary", "r0").data?["n"]?.intValue ?? -1
        }
        let arrivals = Arrivals()
        let consumer = Task {
            for try await value in store.observe(request) { arrivals.received(value) }
        }
        defer { consumer.cancel() }
        guard arrivals.wait(for: 0, seconds: 10) != nil else { throw BenchError("B10 observe: the first value never came") }
        var samples = Samples()
        for run in 1...writes {
            let value = records + run
            try store.write { try $0.put("vocabulary", "r0", data: ["n": .number(String(value))]) }
            let returned = DispatchTime.now().uptimeNanoseconds
            guard let arrived = arrivals.wait(for: value, seconds: 10) else {
                throw BenchError("B10 observe: the observer never saw write \(run)")
            }
            samples.append(Double(arrived > returned ? arrived - returned : 0) / 1e9)
        }
        return ScenarioResult(
            scenario: context.scenario,
            rows: [ResultRow.latency(label: "B10 observe: a local write reaches its observer (after the write returns)",
                                     samples: samples, p95Target: p95Target)],
            notes: [
                "Data: an `aac` profile with \(Format.count(records)) `vocabulary` records, written in-process by "
                    + "`ConcordStore.write` (one signed commit per write).",
                "Timed: from the return of `store.write` (one record changed) to the moment the task iterating "
                    + "`store.observe(request)` receives the value that holds it; the request reads that one record. "
                    + "\(writes) writes, one at a time, each awaited before the next.",
                "Runs: \(Format.runs(samples)).",
            ])
    }
}

/// The values an observer received, with when each came, for the bench's thread to wait on.
private final class Arrivals: @unchecked Sendable {
    // Safe: `seen` is read and written only while holding `condition`.
    private let condition = NSCondition()
    private var seen = [Int: UInt64]()

    func received(_ value: Int) {
        condition.lock()
        if seen[value] == nil { seen[value] = DispatchTime.now().uptimeNanoseconds }
        condition.broadcast()
        condition.unlock()
    }

    /// When `value` arrived (uptime nanoseconds), waiting up to `seconds` for it.
    func wait(for value: Int, seconds: Double) -> UInt64? {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while seen[value] == nil {
            if !condition.wait(until: deadline) { break }
        }
        return seen[value]
    }
}
