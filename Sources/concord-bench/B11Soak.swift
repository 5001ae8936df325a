import ConcordTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// B11: a `concord watch` left running: its resident memory over thousands of idle polls and
/// then hundreds of syncs, over a path remote and over ssh. The target is on growth (MB), not a ratio.
enum WatchSoakBenchmark {
    /// The watcher asks the remote every 50 ms (its tick, looking for local commits, is 20 ms).
    static let interval = "0.05"
    /// What the watcher prints (with CONCORD_TRACE_PERF=1) after each remote check.
    static let pollMarker = "watch: remote checked"
    static let syncedMarker = #""event":"synced""#
    static let errorMarker = #""event":"error""#
    /// A sync the watcher has not made this long after its change aborts the scenario.
    static let syncTimeout: TimeInterval = 30

    enum Transport: String { case path, ssh }

    /// The watcher's resident size at the readings, and what it did.
    struct Figures {
        let transport: Transport
        let polls: Int
        let syncs: Int
        let start: Int
        let thousandAt: Int
        let afterThousand: Int
        let afterIdle: Int
        let end: Int
        let idleSeconds: Double
        let syncSeconds: Double
        /// Soaked through a `SyncEngine` in the bench's own process, not a `concord watch` child.
        var throughEngine = false
        var growth: Int { end - start }
    }

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let (polls, syncs) = context.soak
        var figures = [Figures]()
        for transport in [Transport.path, .ssh] {
            figures.append(try soak(context, transport: transport, polls: polls, syncs: syncs))
        }
        for transport in [Transport.path, .ssh] {
            figures.append(try soakEngine(context, transport: transport, polls: polls, syncs: syncs))
        }
        let scenario = context.scenario
        let limit = Int(scenario.targetRatio * 1_048_576)
        let rows = figures.map { figure in
            ResultRow(label: "B11 \(figure.throughEngine ? "`SyncEngine` in process, interval \(interval) s," : "`watch --interval \(interval)`") "
                        + "over \(figure.transport == .path ? "a path remote" : "ssh"): "
                        + "\(Format.count(figure.polls)) idle polls, then \(figure.syncs) syncs; resident size (ratio column = "
                        + "growth end − start, MB; no git counterpart)",
                      concordCell: "start \(megabytes(figure.start)), after \(Format.count(figure.thousandAt)) polls "
                        + "\(megabytes(figure.afterThousand)), end \(megabytes(figure.end))",
                      gitCell: "—", ratio: Double(figure.growth) / 1_048_576,
                      targetCell: "growth ≤ \(Format.ratio(scenario.targetRatio)) MB", met: figure.growth <= limit, fastest: nil)
        }
        return ScenarioResult(
            scenario: scenario, rows: rows,
            notes: [
                "Set-up (not measured): a bare repository made by `concord init --bare`, reached as a path and, in the second "
                    + "run, as `ssh://…@127.0.0.1:<port>/…` through the sshd fixture (B4's); device A (alice@a) creates an `aac` "
                    + "profile, adds B's key, publishes it with `concord sync`; device B (alice@b) runs `concord clone`. Then B "
                    + "runs `concord watch --interval \(interval) --json` with `CONCORD_TRACE_PERF=1`, which prints a line "
                    + "per remote check, so the polls are counted exactly. B asks the remote every 50 ms (the interval; "
                    + "its tick, which looks for local commits, is 20 ms).",
                "Measured: B's resident size (`VmRSS` of /proc/<pid>/status of the watch process) after its first poll "
                    + "(start), after \(Format.count(min(1_000, polls))) polls, after \(Format.count(polls)) idle polls, and "
                    + "at the end: after \(syncs) syncs of small changes, taking turns: A puts a record and runs `concord "
                    + "sync` (B fetches it), or a `concord put` process writes into B's profile (B pushes it); each "
                    + "waits for B's `synced` event, then B makes 20 more idle polls before the last reading.",
                "Then the same soak again with B's profile kept in sync by a `SyncEngine` (the library's watch, as an app "
                    + "runs it) inside the bench's own process; polls are counted by the engine, the resident size read is the "
                    + "bench process's own, and its rows are marked `SyncEngine` in process. Its changes' `concord put` and "
                    + "`sync` children are started with posix_spawn, not Foundation's `Process` (as everywhere else): "
                    + "its launches kept ~12 KB each of the bench's own memory, ~1.7–1.8 MB over 100 syncs.",
                "Checks: B reports no `error` event and exits 0 on SIGTERM (the engine: no failure or outage in its progress). "
                    + "Goal: growth (end − start) ≤ "
                    + "\(Format.ratio(scenario.targetRatio)) MB. `--soak-polls N` and `--soak-syncs N` shorten the run.",
                "Runs: " + figures.map { figure in
                    "\(figure.throughEngine ? "engine " : "")\(figure.transport.rawValue): start \(megabytes(figure.start)), "
                        + "after \(Format.count(figure.thousandAt)) polls "
                        + "\(megabytes(figure.afterThousand)), after \(Format.count(figure.polls)) polls \(megabytes(figure.afterIdle)) "
                        + "(\(Format.duration(figure.idleSeconds))), after \(figure.syncs) syncs \(megabytes(figure.end)) "
                        + "(\(Format.duration(figure.syncSeconds)))"
                }.joined(separator: "; ") + ".",
            ],
            findings: [
                "**What grew, and why it no longer does.** Before this row existed, an idle watch on a path remote grew by "
                    + "~280 KB per poll (33 → 48 MB in 30 s at `--interval 0.5`). libgit2 1.5's `git_remote_lookup` applies "
                    + "`url.*.insteadOf` through a config glob iterator whose PCRE2 match leaks its match data (~20 KB of heap "
                    + "frames) for every config entry that does not match, and watch looked a remote up twice per poll; "
                    + "Concord now reads `remote.<name>.url` from a config snapshot and transfers through an anonymous remote "
                    + "without insteadOf. Then each sync still added to libgit2's object cache (every commit a merge-base walk "
                    + "parses) and kept the new pack of every fetch open and mapped, two file descriptors per sync round: "
                    + "`sync` now releases the repository's caches and packs when it ends (`git_repository__cleanup`), and the "
                    + "object cache (32 MiB) has a process-wide bound (a bound on open pack files, 64 until issue 43, made "
                    + "libgit2 1.5.1 close packs other threads were reading: the heap corruption). Over ssh, libgit2 1.5.1 also "
                    + "loses the list it loads from `$HOME/.ssh/known_hosts` at every connection (~126 KB per poll with a "
                    + "200-line file; this row's HOME has none): for each ssh transfer Concord points HOME at a private "
                    + "directory holding only its own known_hosts lines for that host. Even that one line is ~0.3 KB lost "
                    + "per connection (heaptrack: `libssh2_knownhost_readline` under `git_remote_connect`, the only "
                    + "allocations a poll kept), ~0.5 MB per 1,000 ssh polls; so the poll reads an ssh remote's refs "
                    + "without libgit2 (`SSHRefAdvertisement`: its own libssh2 connection, same host-key check and "
                    + "device key, everything freed); heaptrack through 60 ssh syncs found no such loss in fetch or push. "
                    + "Syncs left no allocation behind (heaptrack, 60 ssh syncs), but glibc kept what they freed: the "
                    + "watch's anonymous memory grew ~4 KB per sync; watch now calls `malloc_trim(0)` after each sync.",
            ])
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }

    /// One watcher soaked over `transport`: set-up, idle polls, syncs, readings.
    static func soak(_ context: BenchContext, transport: Transport, polls: Int, syncs: Int) throws -> Figures {
        let concord = context.concord
        let root = context.path(transport.rawValue)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        context.progress("B11 \(transport.rawValue): preparing a bare repository, devices A and B")
        let devices = try TwoDevices.make(context, in: root, overSSH: transport == .ssh)
        defer { devices.stop() }
        let (homeB, profileB) = (devices.homeB, devices.profileB)

        let log = root.appendingPathComponent("watch-b.log")
        var environment = concord.environment(home: homeB)
        environment["CONCORD_TRACE_PERF"] = "1"
        let watcher = try ChildProcess(path: concord.path, arguments: ["watch", "-C", profileB.path, "--interval", interval, "--json"],
                                       environment: environment, output: log)
        defer { watcher.stop(grace: 10) }
        let output = LogCounter(log)
        func failure(_ what: String) -> BenchError {
            BenchError("B11 \(transport.rawValue): \(what)\nB's watch (last lines):\n\(output.tail)")
        }
        let readings = Readings(
            polls: {
                if let status = watcher.exitStatus() { throw failure("concord watch exited \(status)") }
                return output.update().polls
            },
            syncs: {
                if let status = watcher.exitStatus() { throw failure("concord watch exited \(status)") }
                return output.update().synced
            },
            resident: {
                guard let bytes = residentBytes(of: watcher.pid) else {
                    throw failure("cannot read the watch process's VmRSS (exited with \(watcher.exitStatus().map(String.init) ?? "?")?)")
                }
                return bytes
            },
            failure: failure)
        let figures = try measure(context, "B11 \(transport.rawValue)", devices: devices, readings: readings, polls: polls, syncs: syncs,
                                  transport: transport)
        let status = watcher.stop(grace: 10)
        output.update()
        guard status == 0 else { throw failure("concord watch exited \(status) after SIGTERM") }
        guard output.errors == 0 else { throw failure("the watch reported \(output.errors) error event(s)") }
        return figures
    }

    /// What `measure` reads from the watcher it soaks, whichever runs it (a `concord watch` child,
    /// a `SyncEngine` in this process); each throws once the watcher is no longer running.
    struct Readings {
        /// Its remote checks so far.
        let polls: () throws -> Int
        /// Its syncs so far.
        let syncs: () throws -> Int
        /// Its resident size, in bytes.
        let resident: () throws -> Int
        let failure: (String) -> BenchError
    }

    /// The soak: `polls` idle polls, then `syncs` changes (A puts and syncs, or a `concord put`
    /// writes into B's profile, taking turns), each waited for until the watcher has synced it,
    /// then 20 more polls; the resident size read at the first poll, after 1,000, after the idle
    /// polls and at the end. `run` runs one `concord` command for a change (arguments, home, what
    /// it is for errors); nil runs it as every bench command runs (`ConcordCLI.run`).
    static func measure(_ context: BenchContext, _ label: String, devices: TwoDevices, readings: Readings, polls: Int, syncs: Int,
                        transport: Transport, throughEngine: Bool = false,
                        run: ((_ arguments: [String], _ home: URL, _ what: String) throws -> Void)? = nil) throws -> Figures {
        let concord = context.concord
        let run = run ?? { arguments, home, what in try concord.run(arguments, home: home, what: what) }
        let (homeA, homeB, profileA, profileB) = (devices.homeA, devices.homeB, devices.profileA, devices.profileB)
        /// Waits until the watcher has made `count` polls in all.
        func waitForPolls(_ count: Int, timeout: TimeInterval) throws {
            let deadline = Date().addingTimeInterval(timeout)
            while try readings.polls() < count {
                guard Date() < deadline else { throw readings.failure("\(try readings.polls()) polls after \(Int(timeout)) s, expected \(count)") }
                usleep(5_000)
            }
        }

        let clock = ContinuousClock()
        context.progress("\(label): \(Format.count(polls)) idle polls")
        let idleStart = clock.now
        try waitForPolls(1, timeout: 30)
        let start = try readings.resident()
        let thousandAt = min(1_000, polls)
        try waitForPolls(thousandAt, timeout: Double(thousandAt))
        let afterThousand = try readings.resident()
        try waitForPolls(polls, timeout: Double(polls))
        let afterIdle = try readings.resident()
        let idleSeconds = idleStart.duration(to: clock.now).seconds

        context.progress("\(label): \(syncs) syncs")
        let syncStart = clock.now
        let syncedBefore = try readings.syncs()
        for index in 1...syncs {
            let id = "soak-\(index)"
            let json = "{\"label\":\"\(id)\",\"category\":\"soak\"}"
            if index % 2 == 1 {
                try run(["put", "-C", profileA.path, "\(VocabularyData.kind)/\(id)", "--json", json], homeA, "concord put (A)")
                try run(["sync", "-C", profileA.path], homeA, "concord sync (A)")
            } else {
                try run(["put", "-C", profileB.path, "\(VocabularyData.kind)/\(id)", "--json", json], homeB, "concord put (into B's profile)")
            }
            let deadline = Date().addingTimeInterval(syncTimeout)
            while try readings.syncs() < syncedBefore + index {
                guard Date() < deadline else { throw readings.failure("sync \(index) not made within \(Int(syncTimeout)) s of its change") }
                usleep(5_000)
            }
        }
        try waitForPolls(try readings.polls() + 20, timeout: 60)
        let end = try readings.resident()
        let syncSeconds = syncStart.duration(to: clock.now).seconds
        context.progress("\(label): resident \(megabytes(start)) at the first poll, \(megabytes(afterThousand)) after "
            + "\(thousandAt), \(megabytes(afterIdle)) after \(polls), \(megabytes(end)) after \(syncs) syncs")
        return Figures(transport: transport, polls: polls, syncs: syncs, start: start, thousandAt: thousandAt, afterThousand: afterThousand,
                       afterIdle: afterIdle, end: end, idleSeconds: idleSeconds, syncSeconds: syncSeconds, throughEngine: throughEngine)
    }

    /// `VmRSS` of process `pid`, in bytes.
    static func residentBytes(of pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        return kilobytes * 1024
    }

    /// Counts poll lines and events in the watcher's output as it grows, reading only what is new.
    final class LogCounter {
        let url: URL
        private var offset: UInt64 = 0
        private var partial = ""
        private(set) var polls = 0
        private(set) var synced = 0
        private(set) var errors = 0
        private var lastLines = [String]()

        init(_ url: URL) { self.url = url }

        var tail: String { lastLines.joined(separator: "\n") }

        @discardableResult
        func update() -> LogCounter {
            guard let handle = try? FileHandle(forReadingFrom: url) else { return self }
            defer { try? handle.close() }
            guard (try? handle.seek(toOffset: offset)) != nil, let data = try? handle.readToEnd(), !data.isEmpty else { return self }
            offset += UInt64(data.count)
            let text = partial + String(decoding: data, as: UTF8.self)
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            partial = String(lines.removeLast())
            for line in lines {
                if line.contains(pollMarker) { polls += 1; continue }
                if line.contains(syncedMarker) { synced += 1 }
                if line.contains(errorMarker) { errors += 1 }
                lastLines.append(String(line.prefix(400)))
                if lastLines.count > 20 { lastLines.removeFirst() }
            }
            return self
        }
    }
}
