import ConcordEngine
import ConcordKit
import Foundation

/// B16: `LogArrival` (what `concord get logs/<id>` runs when two authors wrote entries under one id:
/// the entries ordered by the commit of main's first-parent chain each arrived in) on histories of two
/// sizes, through `Records.logEntries(_:id:)` in this process, against git's own first-parent,
/// path-limited walk of the log's day file (`git log --first-parent --format=%H -- logs/<day>.jsonl`:
/// the commits that changed it, which is where each entry arrived) on the same repository in the same run.
enum LogArrivalBenchmark {
    static let sizes = [1_000, 10_000]
    /// Of the commits between the two entries, every `appendEvery`-th appends another entry to the
    /// same day file (a busy log); the rest put one vocabulary record.
    static let appendEvery = 10
    static let sharedID = "b16-shared"

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let scaling = try SizeScaling(sizes, runs: "arrival", figures: "LogArrival") { try measure(context, commits: $0) }
        return scaling.result(context, notes: [
            "Set-up, not timed: an `aac` profile on a bare remote, alice (the creator) and bob (a User) each with a clone, written "
                + "through the library in this process. alice appends entry `\(sharedID)` to `logs`, then makes N more commits "
                + "(every \(appendEvery)th appends another entry to the same day file, the others put one vocabulary record) and "
                + "syncs; bob syncs, appends his own entry under the same id `\(sharedID)` and syncs; alice syncs (a fast-forward).",
            "Timed, per run: in alice's clone, `profile.records.logEntries(logs, id: \(sharedID))` (the day files read, then "
                + "`LogArrival.ordered`: main's first-parent chain walked back from HEAD while an entry is still in the commit's "
                + "day file, re-reading the file each time its blob changed), which must give both entries, alice's first; and "
                + "`git log --first-parent --format=%H -- logs/<that day file>` in a process, which must list every commit that "
                + "changed it.",
            scaling.costNote("Per commit between the entries: ", subject: "LogArrival", unit: "commit",
                             worse: "worse than linear (the day file grows with the history, and each of its versions on the way "
                                 + "is parsed whole)."),
            scaling.runsNote,
        ])
    }

    /// LogArrival's and git's times with `commits` commits between the two entries, and their row's label.
    static func measure(_ context: BenchContext, commits: Int) throws -> (label: String, concord: Samples, git: Samples) {
        let devices = try LibraryDevice.make(context, in: context.path("history-\(commits)"), members: [("alice", .admin), ("bob", .user)])
        let (alice, bob) = (devices[0], devices[1])
        context.progress("B16 preparing: \(Format.count(commits)) commits between two authors' entries under one id")
        try alice.append(id: sharedID, text: "alice's")
        for index in 0..<commits {
            if index % appendEvery == appendEvery - 1 { try alice.append(text: "entry \(index)") } else { try alice.put(index) }
            if index % 2_000 == 1_999 { context.progress("B16 preparing: \(Format.count(index + 1)) commits") }
        }
        try alice.sync()
        try bob.sync()
        try bob.append(id: sharedID, text: "bob's")
        try bob.sync()
        try alice.sync()

        let logs = alice.directory.appendingPathComponent("logs")
        let dayFiles = try FileManager.default.contentsOfDirectory(atPath: logs.path).sorted()
        guard let day = try dayFiles.first(where: { try String(contentsOf: logs.appendingPathComponent($0), encoding: .utf8).contains(sharedID) }) else {
            throw BenchError("B16: no day file in \(logs.path) holds \(sharedID) (files: \(dayFiles))")
        }
        let changes = try MergeSyncBenchmark.count(context, ["rev-list", "--first-parent", "--count", "HEAD", "--", "logs/\(day)"],
                                                   in: alice.directory)
        let kind = try alice.profile.kind(named: "logs"), id = try RecordID(sharedID)
        var arrival = Samples(), git = Samples()
        for run in 0...context.runs {
            context.progress("B16 \(Format.count(commits)) commits, run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            let profile = try Profile.open(at: alice.directory, environment: ConcordEnvironment(home: alice.home))
            var entries = [LogEntry]()
            let ordered = try IndexBenchmark.timed { entries = try profile.records.logEntries(kind, id: id) }
            let logged = try context.git.run(["log", "--first-parent", "--format=%H", "--", "logs/\(day)"], in: alice.directory,
                                             what: "git log --first-parent -- <day file>")
            guard entries.map(\.by) == ["alice", "bob"] else {
                throw BenchError("B16: logEntries gave \(entries.map(\.by)) for \(sharedID), expected alice's then bob's")
            }
            guard logged.output.split(separator: "\n").count == changes else { throw BenchError("B16: git log listed another count") }
            if run > 0 { arrival.append(ordered); git.append(logged.seconds) }
        }
        return ("B16 get logs/<id> with two authors' entries \(Format.count(commits)) commits apart "
                    + "(LogArrival) vs git log --first-parent -- <day file>", arrival, git)
    }
}
