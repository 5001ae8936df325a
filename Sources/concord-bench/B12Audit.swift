import ConcordEngine
import ConcordKit
import Foundation

/// B12: the audit at 100,000 commits. `concord log --record` and `concord history` of one record
/// must stay under 1 s (issue: they must not read every commit's tree), compared with git's own
/// path-limited walk, `git log -- <record file>`, on the same repository in the same run.
enum AuditBenchmark {
    static let commits = 100_000
    static let records = 10_000
    /// The record whose audit is timed: written by every `records`-th commit (10 versions).
    static let record = 4_242
    static let limit = 1.0

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let home = context.path("home"), profileDirectory = context.path("profile")
        try context.concord.makeHome(home, member: "alice", device: "a")
        try context.concord.run(["init", profileDirectory.path, "--name", "B12", "--template", "aac"], home: home, what: "concord init")
        // 100,000 one-record commits, written in this process through the library: record i % 10,000,
        // revision i / 10,000 + 1, so each record has 10 versions spread over the whole history.
        context.progress("B12 preparing: \(Format.count(commits)) one-record commits")
        let identity = try Identity.load(from: home)
        let profile = try Profile.open(at: profileDirectory, environment: ConcordEnvironment(home: home))
        for index in 0..<commits {
            try profile.records.write(as: identity) { transaction in
                try transaction.put(VocabularyData.kind, VocabularyData.id(index % records),
                                    data: VocabularyData.data(index % records, revision: index / records + 1))
            }
            if index % 10_000 == 9_999 { context.progress("B12 preparing: \(Format.count(index + 1)) commits") }
        }
        let total = try context.git.commitCount(profileDirectory)
        let reference = "\(VocabularyData.kind)/\(VocabularyData.id(record))"
        let path = try context.git.run(["ls-files", "vocabulary"], in: profileDirectory, what: "git ls-files").output
            .split(separator: "\n").first { $0.hasSuffix("/\(VocabularyData.id(record)).json") }.map(String.init)
        guard let path else { throw BenchError("no file for \(reference) in the B12 profile") }
        let versions = commits / records

        // The writes kept the audit index (`.git/concord/audit-index`) at HEAD. A profile from before
        // the index has none: its first query builds it. One run, timed apart, with the index deleted.
        let index = profileDirectory.appendingPathComponent(".git/concord/audit-index")
        guard FileManager.default.fileExists(atPath: index.path) else { throw BenchError("the writes left no audit index at \(index.path)") }
        try FileManager.default.removeItem(at: index)
        context.progress("B12 first query without an index: builds it over \(Format.count(total)) commits")
        let first = try context.concord.run(["log", "--record", reference, "--json", "-C", profileDirectory.path], home: home,
                                            what: "concord log --record (first)")
        var log = Samples(), history = Samples(), gitLog = Samples()
        for run in 0...context.runs {
            context.progress("B12 run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            let logged = try context.concord.run(["log", "--record", reference, "--json", "-C", profileDirectory.path], home: home,
                                                 what: "concord log --record")
            let histories = try context.concord.run(["history", reference, "--json", "-C", profileDirectory.path], home: home,
                                                    what: "concord history")
            let gitLogged = try context.git.run(["log", "--format=%H", "--", path], in: profileDirectory, what: "git log -- <record file>")
            for (what, output) in [("concord log --record", logged.output), ("concord history", histories.output)] {
                guard let entries = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [Any], entries.count == versions else {
                    throw BenchError("\(what) \(reference) did not list \(versions) versions: \(output.prefix(300))")
                }
            }
            guard gitLogged.output.split(separator: "\n").count == versions else {
                throw BenchError("git log -- \(path) listed \(gitLogged.output.split(separator: "\n").count) commits, not \(versions)")
            }
            guard run > 0 else { continue }
            log.append(logged.seconds)
            history.append(histories.seconds)
            gitLog.append(gitLogged.seconds)
        }
        func row(_ label: String, _ samples: Samples) -> ResultRow {
            ResultRow(label: label, concordCell: Format.duration(samples.median), gitCell: Format.duration(gitLog.median),
                      ratio: samples.median / gitLog.median, targetCell: "≤ 1 s", met: samples.median <= limit,
                      fastest: "concord \(Format.duration(samples.fastest))")
        }
        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                row("B12 concord log --record (one record's \(versions) changes in \(Format.count(total)) commits) vs git log -- <its file>", log),
                row("B12 concord history (every version of that record) vs git log -- <its file>", history),
                ResultRow(label: "B12 the first concord log --record of a profile without an audit index (builds it over \(Format.count(total)) commits) vs git log -- <its file>",
                          concordCell: Format.duration(first.seconds), gitCell: Format.duration(gitLog.median),
                          ratio: first.seconds / gitLog.median, targetCell: nil, met: nil, fastest: nil),
            ],
            notes: [
                "Set-up, not timed: one `aac` profile; \(Format.count(commits)) commits written through the library in one process, "
                    + "each a normal signed concord commit putting one vocabulary record (record i mod \(Format.count(records)), "
                    + "so each record has \(versions) versions spread over the history).",
                "Each write caught the audit index up (one line per commit), so the queries read it as it is. Not in the runs: "
                    + "the index is then deleted, as for a profile written before it existed, and the first `concord log --record` "
                    + "builds it over all \(Format.count(total)) commits (the files each changed against its first parent, read from "
                    + "their trees, as `git log -- <file>` reads them). Its time is the third row.",
                "Timed, per run: `concord log --record \(reference) --json`, `concord history \(reference) --json` (both must list "
                    + "\(versions) entries), and git's path-limited walk `git log --format=%H -- <that record's file>` (\(versions) "
                    + "commits). The target is absolute: under 1 s at \(Format.count(total)) commits.",
                "Runs: log \(Format.runs(log)); history \(Format.runs(history)); git \(Format.runs(gitLog)).",
            ])
    }
}
