import ConcordKit
import ConcordTestSupport
import Foundation

/// B11 through the library: the soak of `WatchSoakBenchmark.soak`, with B's profile kept in sync by
/// a `SyncEngine` in this process (as an app runs it) instead of a `concord watch` child; the
/// readings are this process's own resident size.
///
/// So that the readings are the engine's, the `concord put` and `sync` children that make the
/// soak's changes are started with `posix_spawn` and reaped with `waitpid` (`ChildProcess`), not
/// with Foundation's `Process`, which every other bench command uses: with `Process` this
/// process's anonymous memory (`RssAnon`) grew ~2.3 MB over 100 syncs (150 launches), against
/// 0.5–0.6 MB with `posix_spawn`; the ~12 KB each launch kept was the bench's, not the engine's.
extension WatchSoakBenchmark {
    /// One `SyncEngine` soaked over `transport`: set-up, idle polls, syncs, readings (`measure`).
    static func soakEngine(_ context: BenchContext, transport: Transport, polls: Int, syncs: Int) throws -> Figures {
        let root = context.path("engine-\(transport.rawValue)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        context.progress("B11 engine \(transport.rawValue): preparing a bare repository, devices A and B")
        let devices = try TwoDevices.make(context, in: root, overSSH: transport == .ssh)
        defer { devices.stop() }
        let engine = SyncEngine(identity: try Identity.load(from: devices.homeB), environment: ConcordEnvironment(home: devices.homeB))
        try engine.add(SyncEngine.Target(directory: devices.profileB, interval: Double(interval) ?? 0.05))
        engine.start()
        defer { engine.stop() }
        // Every sync records its time: a new `lastSync` is a sync made. A failure or an outage sets `lastError`.
        var (failures, syncsMade, lastSync) = ([String](), 0, Date?.none)
        func progress() -> SyncProgress? {
            let progress = engine.progress(of: devices.profileB)
            if let error = progress?.lastErrorMessage, failures.last != error { failures.append(error) }
            if let seen = progress?.lastSync, seen != lastSync { (syncsMade, lastSync) = (syncsMade + 1, seen) }
            return progress
        }
        func failure(_ what: String) -> BenchError {
            BenchError("B11 engine \(transport.rawValue): \(what); failures: \(failures.isEmpty ? "none" : failures.joined(separator: "; "))")
        }
        func running() throws {
            if progress()?.phase == .stopped { throw failure("the engine's profile stopped") }
        }
        let readings = Readings(
            polls: { try running(); return engine.remoteChecks(of: devices.profileB) },
            syncs: { try running(); return syncsMade },
            resident: {
                guard let bytes = residentBytes(of: getpid()) else { throw failure("cannot read this process's VmRSS") }
                return bytes
            },
            failure: failure)
        let log = root.appendingPathComponent("changes.log")
        let figures = try measure(context, "B11 engine \(transport.rawValue)", devices: devices, readings: readings, polls: polls,
                                  syncs: syncs, transport: transport, throughEngine: true) { arguments, home, what in
            let child = try ChildProcess(path: context.concord.path, arguments: arguments,
                                         environment: context.concord.environment(home: home), output: log)
            let status = child.wait()
            guard status == 0 else {
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                throw failure("\(what) exited \(status): \(output.split(separator: "\n").suffix(5).joined(separator: "\n"))")
            }
        }
        engine.stop()
        guard failures.isEmpty else { throw failure("the engine reported \(failures.count) failure(s)") }
        return figures
    }
}
