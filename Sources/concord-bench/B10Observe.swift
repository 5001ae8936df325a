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
        let local = try latencies(context, "profile", identity, home, writer: .sameStore)
        let other = try latencies(context, "other", identity, home, writer: .anotherStore)
        let polled = try latencies(context, "polled", identity, home, writer: .anotherStore, polling: true)
        let (otherP95, polledP95) = (other.percentile(95), polled.percentile(95))
        return ScenarioResult(
            scenario: context.scenario,
            rows: [ResultRow.latency(label: "B10 observe: a local write reaches its observer (after the write returns)",
                                     samples: local, p95Target: p95Target),
                   ResultRow(label: "B10 observe: another process's write reaches the observer (the kernel tells the watcher; against its 20 ms poll)",
                             concordCell: "p50 \(Format.duration(other.median)), p95 \(Format.duration(otherP95))",
                             gitCell: "polling: p50 \(Format.duration(polled.median)), p95 \(Format.duration(polledP95))",
                             ratio: otherP95 / polledP95, targetCell: "p95 ≤ \(Format.duration(p95Target))", met: otherP95 <= p95Target,
                             fastest: nil)],
            notes: [
                "Data: an `aac` profile with \(Format.count(records)) `vocabulary` records, written in-process by "
                    + "`ConcordStore.write` (one signed commit per write).",
                "Timed: from the return of `store.write` (one record changed) to the moment the task iterating "
                    + "`store.observe(request)` receives the value that holds it; the request reads that one record. "
                    + "\(writes) writes, one at a time, each awaited before the next.",
                "Another process's write: the same, written through a second `ConcordStore` on the folder, which "
                    + "does not nudge the observed store's watcher (as the CLI's or `git pull`'s would not): on Linux "
                    + "the kernel tells it (inotify on the refs); the comparison is the same run with the watcher "
                    + "looking every 20 ms instead (where inotify cannot watch). Ratio: p95 / the poll's p95.",
                "Runs, local: \(Format.runs(local)).",
                "Runs, another process's: \(Format.runs(other)); polling: \(Format.runs(polled)).",
            ])
    }

    /// Who writes what the observer waits for: its own store (which nudges its watcher), or a
    /// second store on the folder (which does not, as another process would not).
    private enum Writer { case sameStore, anotherStore }

    /// The latency of each of `writes` writes to a new profile `name` until its store's observer
    /// has the value; `polling`: the observed store's watcher looks every 20 ms.
    private static func latencies(_ context: BenchContext, _ name: String, _ identity: Identity, _ home: URL, writer: Writer,
                                  polling: Bool = false) throws -> Samples {
        var environment = ConcordEnvironment(home: home)
        environment.watchesByPolling = polling
        let directory = context.path(name)
        let store = try ConcordStore.create(at: directory, name: "B10 observe", template: .aac, identity: identity,
                                            environment: environment)
        try store.write { transaction in
            for index in 0..<records { try transaction.put("vocabulary", "r\(index)", data: ["n": .number(String(index))]) }
        }
        let writing = writer == .sameStore ? store : try ConcordStore.open(at: directory, identity: identity, environment: ConcordEnvironment(home: home))
        defer { if writer == .anotherStore { writing.close() } }
        context.progress("B10 observe: \(writes) writes, each awaited by an observer of the kind"
                         + (writer == .anotherStore ? " (by another store\(polling ? ", the watcher polling" : ""))" : ""))
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
            try writing.write { try $0.put("vocabulary", "r0", data: ["n": .number(String(value))]) }
            let returned = DispatchTime.now().uptimeNanoseconds
            guard let arrived = arrivals.wait(for: value, seconds: 10) else {
                throw BenchError("B10 observe: the observer never saw write \(run)")
            }
            samples.append(Double(arrived > returned ? arrived - returned : 0) / 1e9)
        }
        return samples
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
