import ConcordKit
import ConcordTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// B4: how long a record written on device A takes to reach device B's working tree when both run
/// `concord watch --interval 1` against a bare repository served over ssh. No git counterpart.
enum PropagationBenchmark {
    static let recordCount = 60
    static let gapRange = 0.5...2.0
    static let seed: UInt64 = 0xB4
    /// How often B's working tree is checked for the records in flight.
    static let pollInterval = Duration.milliseconds(20)
    /// A record that takes longer than this to arrive aborts the scenario.
    static let timeout = Duration.seconds(20)
    /// The timed `concord sync` rounds after the run (or `--runs`, if more).
    static let syncRounds = 3

    /// B4S: the same propagation when the server is a concord server, so B's watch is told by
    /// `concord-wait` when main moves instead of finding out at its next poll.
    static func runThroughServe(_ context: BenchContext) throws -> ScenarioResult {
        let fleet = try Fleet.make(context, throughServe: true)
        defer { fleet.devices.stop() }
        let (latencies, early, putTimes, _) = try propagate(context, fleet: fleet, id: "B4S")
        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                .latency(label: "B4S propagation A put → B working tree, \(recordCount) records, both `watch --interval 1`, ssh through "
                            + "concord serve (live updates)", samples: latencies, p95Target: context.scenario.targetRatio),
            ],
            notes: [
                "As B4 (same records, gaps and seed, same checks), but sshd's AuthorizedKeysCommand is "
                    + (TwoDevices.lookupPath(beside: context.concord.path) == nil ? "`concord serve --lookup`" : "`concord-lookup`") + " on a "
                    + "directory made by `concord server init`, every connection runs `concord serve` as its forced command, and A's "
                    + "first sync creates the profile on the server. Each watch keeps a `concord-wait … pack` open: the server answers "
                    + "the moment main moves, with the new commits, so B's sync takes them without connecting again; while the "
                    + "waits work, a watch polls at most every 60 s instead of every second.",
                "Latencies: min \(Format.duration(latencies.fastest)), p50 \(Format.duration(latencies.median)), p95 "
                    + "\(Format.duration(latencies.percentile(95))), max \(Format.duration(latencies.percentile(100))). \(early) "
                    + "record(s) reached B before A's put process had exited (counted as 0). `concord put` took "
                    + "\(Format.duration(putTimes.median)) (median).",
            ])
    }

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let fleet = try Fleet.make(context)
        defer { fleet.devices.stop() }
        let (latencies, early, putTimes, synced) = try propagate(context, fleet: fleet, id: "B4")
        // With a baseline: the earlier binary's own sshd, bare repository and devices; its propagation after
        // this build's (one run each), then the sync rounds of both binaries in turns.
        let baselineFleet = try context.baseline.map { try Fleet.make($0.context) }
        defer { baselineFleet?.devices.stop() }
        var baselineLatencies = Samples()
        if let other = context.baseline, let baselineFleet {
            baselineLatencies = try propagate(other.context, fleet: baselineFleet, id: "B4 baseline (\(other.binary))").latencies
        }
        let timed = try context.inTurns(1...max(syncRounds, context.runs), with: baselineFleet,
                                        { try syncRound(context, fleet: fleet, round: $0) },
                                        baseline: { try syncRound($0.context, fleet: $1, round: $2) })
        let rounds = (push: Samples(timed.this.map(\.push)), fetch: Samples(timed.this.map(\.fetch)))
        let baselineRounds = (push: Samples(timed.baseline.map(\.push)), fetch: Samples(timed.baseline.map(\.fetch)))

        let scenario = context.scenario
        let p95 = latencies.percentile(95)
        return ScenarioResult(
            scenario: scenario,
            rows: [
                .latency(label: "B4 propagation A put → B working tree, \(recordCount) records, both `watch --interval 1`, ssh "
                            + "(no git counterpart)", samples: latencies, p95Target: scenario.targetRatio),
            ] + (context.baseline.map { other in [
                other.latencyRow("B4 propagation (ratio of the p95s), this build vs an earlier one", concord: latencies,
                                 baseline: baselineLatencies, target: BenchContext.baselineTarget),
            ] } ?? []) + context.baselineRows(
                ("B4 A's `concord sync` right after a put (the push alone), this build vs an earlier one", rounds.push, baselineRounds.push),
                ("B4 B's `concord sync` with nothing new (one fetch), this build vs an earlier one", rounds.fetch, baselineRounds.fetch),
                target: BenchContext.baselineTarget),
            notes: [
                "Set-up (not timed): the sshd fixture on 127.0.0.1 (OpenSSH, its own host key and authorized_keys), a bare "
                    + "repository made by `concord init --bare` and reached as `ssh://…@127.0.0.1:<port>/…`; device A "
                    + "(alice@a) and device B (alice@b), each with its own `CONCORD_HOME`, both keys authorized on sshd. A "
                    + "creates a fresh `aac` profile, adds B's key (`members add alice --role admin --key … --device b`), "
                    + "`remote add origin`, `remote trust origin` and publishes it with `concord sync`; B runs "
                    + "`concord clone <url> --trust-host SHA256:…`. Then both run `concord watch --interval 1 --json`.",
                "Timed, per record: A runs `concord put -C A vocabulary/<id> --json '{...}'` (\(recordCount) records, one at a "
                    + "time, a random gap of \(gapRange.lowerBound)–\(gapRange.upperBound) s between one put's exit and "
                    + "the next put, SplitMix64 seed \(seed)); the latency is the time from that put's exit until "
                    + "`vocabulary/<bucket>/<id>.json` exists in B's working tree, checked every 20 ms (so ±20 ms). Records "
                    + "are in flight concurrently.",
                "What a latency contains: A's watch looks for local commits every 20 ms and then syncs (the push alone "
                    + "when the server's main is where A last saw it: one SSH connection); B's watch lists the remote's refs once per interval (1 s, counted "
                    + "from the start of the previous check; one connection) and, seeing `main` moved, syncs (fetch: "
                    + "another connection; fast-forward; working tree). So a latency is ≤ 20 ms + A's sync + a wait "
                    + "of 0–1 s + B's check + B's sync.",
                "Latencies: min \(Format.duration(latencies.fastest)), p25 \(Format.duration(latencies.percentile(25))), "
                    + "p50 \(Format.duration(latencies.median)), p75 \(Format.duration(latencies.percentile(75))), p95 "
                    + "\(Format.duration(p95)), max \(Format.duration(latencies.percentile(100))). \(early) record(s) "
                    + "reached B before A's put process had exited (counted as 0). `concord put` took "
                    + "\(Format.duration(putTimes.median)) (median). Watch events: A synced \(synced[0]) times, B \(synced[1]) "
                    + "times.",
                "Checks: every put exits 0; every record arrives within \(timeout.components.seconds) s; both watchers exit 0 "
                    + "on SIGTERM with no `error` event; B's HEAD holds all \(recordCount) records.",
                "After the watchers stop, for the finding below (not part of the latency): `concord sync` on A right after "
                    + "a put (the push alone) \(Format.runs(rounds.push)); `concord sync` on B with nothing new (one fetch, "
                    + "after an untimed sync that took A's commit) \(Format.runs(rounds.fetch)). These are whole processes "
                    + "(start-up included), so a little slower than the same syncs inside a running watch.",
            ] + context.baselineNotes({ binary in
                "the same propagation (same records, gaps and seed, same checks) by the earlier binary \(binary) on its own "
                    + "sshd, bare repository and devices A and B, set up the same way: one run each, the earlier binary's "
                    + "after this build's (its latencies: p50 \(Format.duration(baselineLatencies.median)), p95 "
                    + "\(Format.duration(baselineLatencies.percentile(95))); the row compares the p95s, which include a 0–1 s wait "
                    + "for B's next check, so this row is the noisiest of the three); then "
                    + "the same sync rounds on its devices, the two binaries taking turns going first, round by round"
            }, runs: [("push", baselineRounds.push), ("fetch", baselineRounds.fetch)], inTurns: false),
            findings: [
                "**Where a propagation's time goes.** A's sync after a put takes "
                    + "\(Format.duration(rounds.push.median)): one SSH connection, the push (a compare-and-swap against "
                    + "what A last fetched, so no fetch first); a sync with nothing to fetch takes "
                    + "\(Format.duration(rounds.fetch.median)), nearly all of it the SSH handshake and sshd starting "
                    + "git-upload-pack, and B pays that twice per record (the ref listing that notices the change, then the "
                    + "fetch), after waiting up to 1 s for its next check. Measured p50 \(Format.duration(latencies.median)), "
                    + "p95 \(Format.duration(p95)). Through a concord server (B4S) B pays neither: its `concord-wait` is "
                    + "answered the moment main moves, with the commits.",
            ])
    }

    /// Starts both devices' watches, times A's puts until each arrives in B's working tree
    /// (`measure`), then checks the run, for B4 and B4S alike: both watchers exit 0 on SIGTERM with
    /// no `error` event, and B's HEAD holds every record. Returns the latencies, the records that
    /// arrived before their put exited, the puts' own times, and how often each watch synced.
    static func propagate(_ context: BenchContext, fleet: Fleet, id: String) throws
        -> (latencies: Samples, early: Int, putTimes: Samples, synced: [Int]) {
        let watchers = try fleet.startWatchers(context)
        defer { for watcher in watchers { watcher.child.stop(grace: 5) } }
        context.progress("\(id) A puts \(recordCount) records with \(gapRange.lowerBound)–\(gapRange.upperBound) s gaps (seed \(seed)); ~75 s")
        let (latencies, early, putTimes) = try measure(context, fleet: fleet, watchers: watchers)
        for watcher in watchers {
            let status = watcher.child.stop(grace: 10)
            guard status == 0 else { throw BenchError("concord watch on \(watcher.name) exited \(status) after SIGTERM:\n\(watcher.tail)") }
            let errors = watcher.events().filter { $0["event"] as? String == "error" }
            guard errors.isEmpty else { throw BenchError("concord watch on \(watcher.name) reported errors:\n\(watcher.tail)") }
        }
        let committed = try context.git.run(["ls-tree", "-r", "--name-only", "HEAD", "\(VocabularyData.kind)/"], in: fleet.profileB,
                                            what: "git ls-tree on B").output.split(separator: "\n").count
        guard committed == recordCount else {
            throw BenchError("B's HEAD holds \(committed) \(VocabularyData.kind) records after the run, expected \(recordCount)")
        }
        let synced = watchers.map { watcher in watcher.events().filter { $0["event"] as? String == "synced" }.count }
        return (latencies, early, putTimes, synced)
    }

    /// Round `round` of the timings after the run, which put numbers on the parts of a propagation:
    /// a put on A, then A's `concord sync` (the push alone over ssh) timed; B's sync taking it, not
    /// timed; then B's sync with nothing new (one fetch) timed.
    static func syncRound(_ context: BenchContext, fleet: Fleet, round: Int) throws -> (push: Double, fetch: Double) {
        let id = "sync-round-\(round)"
        try context.concord.run(["put", "-C", fleet.profileA.path, "\(VocabularyData.kind)/\(id)", "--json", "{\"label\":\"\(id)\"}"],
                                home: fleet.homeA, what: "concord put (A)")
        let push = try context.concord.run(["sync", "-C", fleet.profileA.path], home: fleet.homeA, what: "concord sync (A)").seconds
        try context.concord.run(["sync", "-C", fleet.profileB.path], home: fleet.homeB, what: "concord sync (B receives)")
        let fetch = try context.concord.run(["sync", "-C", fleet.profileB.path], home: fleet.homeB, what: "concord sync (B)").seconds
        return (push, fetch)
    }

    /// Puts the records on A (each as a child process, so B is polled while a put runs) and returns the
    /// latencies, how many arrived before their put exited, and the puts' own durations.
    static func measure(_ context: BenchContext, fleet: Fleet, watchers: [Watcher]) throws
        -> (latencies: Samples, early: Int, putTimes: Samples) {
        var generator = SeededGenerator(seed: seed) // the same gaps in every bench run
        let gaps = (0..<recordCount).map { _ in Double.random(in: gapRange, using: &generator) }
        let clock = ContinuousClock()
        let putLog = context.path("puts.log")
        var nextPut = clock.now, nextPoll = clock.now
        var running: (index: Int, child: ChildProcess, started: ContinuousClock.Instant)?
        var started = 0
        var returned = [Int: ContinuousClock.Instant](), seen = [Int: ContinuousClock.Instant]()
        var putTimes = Samples()

        while seen.count < recordCount || returned.count < recordCount {
            let now = clock.now
            if let put = running, let status = put.child.exitStatus() {
                guard status == 0 else {
                    throw BenchError("concord put of record \(put.index) on A exited \(status):\n\(tail(of: putLog))")
                }
                returned[put.index] = now
                putTimes.append(put.started.duration(to: now).seconds)
                nextPut = now + .seconds(gaps[put.index])
                running = nil
            }
            if running == nil, started < recordCount, now >= nextPut {
                let id = recordID(started)
                let json = "{\"label\":\"\(id)\",\"spoken\":\"I want \(id)\",\"category\":\"propagation\"}"
                let child = try ChildProcess(path: context.concord.path,
                                             arguments: ["put", "-C", fleet.profileA.path, "\(VocabularyData.kind)/\(id)", "--json", json],
                                             environment: context.concord.environment(home: fleet.homeA), output: putLog)
                running = (started, child, now)
                started += 1
            }
            if now >= nextPoll {
                nextPoll = now + pollInterval
                for index in 0..<started where seen[index] == nil {
                    let file = fleet.profileB.appendingPathComponent(RecordPaths.file(directory: VocabularyData.kind, id: recordID(index)))
                    if access(file.path, F_OK) == 0 { seen[index] = now }
                }
                for (index, time) in returned where seen[index] == nil && time.duration(to: now) > timeout {
                    throw BenchError("record \(recordID(index)) did not reach B within \(timeout.components.seconds) s of its put\n"
                        + "A's watch:\n\(watchers[0].tail)\nB's watch:\n\(watchers[1].tail)")
                }
            }
            usleep(2_000)
        }

        var latencies = Samples(), early = 0
        for index in 0..<recordCount {
            guard let put = returned[index], let arrived = seen[index] else { continue }
            let latency = put.duration(to: arrived).seconds
            if latency < 0 { early += 1 }
            latencies.append(max(0, latency))
        }
        return (latencies, early, putTimes)
    }

    static func recordID(_ index: Int) -> String { "p\(String(format: "%03d", index))" }

    static func tail(of url: URL) -> String {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(20).joined(separator: "\n")
    }

    /// The sshd, the bare repository behind it, and the two devices' homes and profiles.
    struct Fleet {
        let devices: TwoDevices
        var homeA: URL { devices.homeA }
        var homeB: URL { devices.homeB }
        var profileA: URL { devices.profileA }
        var profileB: URL { devices.profileB }

        static func make(_ context: BenchContext, throughServe: Bool = false) throws -> Fleet {
            context.progress("B4 preparing: sshd" + (throughServe ? " with concord serve" : "") + ", a bare repository over ssh, devices A and B")
            return Fleet(devices: try TwoDevices.make(context, in: context.directory, overSSH: true, throughServe: throughServe))
        }

        /// `concord watch --interval 1 --json` on A and B, once both have printed their `started` event.
        func startWatchers(_ context: BenchContext) throws -> [Watcher] {
            let watchers = try [("A", profileA, homeA), ("B", profileB, homeB)].map { name, profile, home in
                let log = context.path("watch-\(name).log")
                let child = try ChildProcess(path: context.concord.path,
                                             arguments: ["watch", "-C", profile.path, "--interval", "1", "--json"],
                                             environment: context.concord.environment(home: home), output: log)
                return Watcher(name: name, child: child, log: log)
            }
            let deadline = Date().addingTimeInterval(10)
            for watcher in watchers {
                while !watcher.events().contains(where: { $0["event"] as? String == "started" }) {
                    if let status = watcher.child.exitStatus() {
                        throw BenchError("concord watch on \(watcher.name) exited \(status) at start:\n\(watcher.tail)")
                    }
                    guard Date() < deadline else { throw BenchError("concord watch on \(watcher.name) printed no `started` event in 10 s:\n\(watcher.tail)") }
                    usleep(20_000)
                }
            }
            return watchers
        }
    }

    /// A running `concord watch --json` and the file its output goes to.
    struct Watcher {
        let name: String
        let child: ChildProcess
        let log: URL

        /// The JSON events printed so far.
        func events() -> [[String: Any]] { jsonObjectLines(of: log) }

        var tail: String { PropagationBenchmark.tail(of: log) }
    }
}
