import ConcordKit
import ConcordTestSupport
import Foundation

/// B11 through the library: the soak of `WatchSoakBenchmark.soak`, with B's profile kept in sync by
/// a `SyncEngine` in this process (as an app runs it) instead of a `concord watch` child; the
/// readings are this process's own resident size.
extension WatchSoakBenchmark {
    static func soakEngine(_ context: BenchContext, transport: Transport, polls: Int, syncs: Int) throws -> Figures {
        let concord = context.concord
        let root = context.path("engine-\(transport.rawValue)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        context.progress("B11 engine \(transport.rawValue): preparing a bare repository, devices A and B")
        let devices = try TwoDevices.make(context, in: root, overSSH: transport == .ssh)
        defer { devices.stop() }
        let (homeA, homeB, profileA, profileB) = (devices.homeA, devices.homeB, devices.profileA, devices.profileB)

        let engine = SyncEngine(identity: try Identity.load(from: homeB), environment: ConcordEnvironment(home: homeB))
        try engine.add(SyncEngine.Target(directory: profileB, interval: Double(interval) ?? 0.05))
        engine.start()
        defer { engine.stop() }
        // Every sync records its time: a new `lastSync` is a sync made. A failure or an outage sets `lastError`.
        var failures = [String]()
        func progress() -> SyncProgress? {
            let progress = engine.progress(of: profileB)
            if let error = progress?.lastError, failures.last != error { failures.append(error) }
            return progress
        }
        func failure(_ what: String) -> BenchError {
            BenchError("B11 engine \(transport.rawValue): \(what); failures: \(failures.isEmpty ? "none" : failures.joined(separator: "; "))")
        }
        func resident() throws -> Int {
            guard let bytes = residentBytes(of: getpid()) else { throw failure("cannot read this process's VmRSS") }
            return bytes
        }
        func waitForPolls(_ count: Int, timeout: TimeInterval) throws {
            let deadline = Date().addingTimeInterval(timeout)
            while engine.remoteChecks(of: profileB) < count {
                _ = progress()
                guard Date() < deadline else { throw failure("\(engine.remoteChecks(of: profileB)) polls after \(Int(timeout)) s, expected \(count)") }
                usleep(5_000)
            }
        }

        let clock = ContinuousClock()
        context.progress("B11 engine \(transport.rawValue): \(Format.count(polls)) idle polls")
        let idleStart = clock.now
        try waitForPolls(1, timeout: 30)
        let start = try resident()
        let thousandAt = min(1_000, polls)
        try waitForPolls(thousandAt, timeout: Double(thousandAt))
        let afterThousand = try resident()
        try waitForPolls(polls, timeout: Double(polls))
        let afterIdle = try resident()
        let idleSeconds = idleStart.duration(to: clock.now).seconds

        context.progress("B11 engine \(transport.rawValue): \(syncs) syncs")
        let syncStart = clock.now
        for index in 1...syncs {
            let lastSync = progress()?.lastSync
            let id = "soak-\(index)"
            let json = "{\"label\":\"\(id)\",\"category\":\"soak\"}"
            if index % 2 == 1 {
                try concord.run(["put", "-C", profileA.path, "\(VocabularyData.kind)/\(id)", "--json", json], home: homeA, what: "concord put (A)")
                try concord.run(["sync", "-C", profileA.path], home: homeA, what: "concord sync (A)")
            } else {
                try concord.run(["put", "-C", profileB.path, "\(VocabularyData.kind)/\(id)", "--json", json], home: homeB,
                                what: "concord put (into B's profile)")
            }
            let deadline = Date().addingTimeInterval(syncTimeout)
            while progress()?.lastSync == lastSync {
                guard Date() < deadline else { throw failure("sync \(index) not made within \(Int(syncTimeout)) s of its change") }
                usleep(5_000)
            }
        }
        try waitForPolls(engine.remoteChecks(of: profileB) + 20, timeout: 60)
        let end = try resident()
        let syncSeconds = syncStart.duration(to: clock.now).seconds
        engine.stop()
        guard failures.isEmpty else { throw failure("the engine reported \(failures.count) failure(s)") }
        context.progress("B11 engine \(transport.rawValue): resident \(megabytes(start)) at the first poll, \(megabytes(afterThousand)) "
            + "after \(thousandAt), \(megabytes(afterIdle)) after \(polls), \(megabytes(end)) after \(syncs) syncs")
        return Figures(transport: transport, polls: polls, syncs: syncs, start: start, thousandAt: thousandAt, afterThousand: afterThousand,
                       afterIdle: afterIdle, end: end, idleSeconds: idleSeconds, syncSeconds: syncSeconds, throughEngine: true)
    }
}
