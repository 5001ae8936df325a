import ConcordKit
import Foundation

/// B2: one `concord put` into a 100,000-record profile vs writing the file, `git add` and
/// `git commit` in a clone of the same repository; also the sizes of the kind and bucket trees.
enum PutBenchmark {
    static let recordCount = 100_000
    /// A small profile timed the same way, to show which part of a put grows with the profile.
    static let smallRecordCount = 1_000

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let large = try PutDataset.build(context, name: "large", records: recordCount)
        let treeSize = try context.git.objectSize("HEAD:\(VocabularyData.kind)", in: large.profile)
        let bucketPath = "HEAD:\(VocabularyData.kind)/\(RecordPaths.bucket(VocabularyData.id(0)))"
        let bucketSize = try context.git.objectSize(bucketPath, in: large.profile)
        let bucketEntries = try context.git.run(["ls-tree", bucketPath], in: large.profile, what: "git ls-tree")
            .output.split(separator: "\n").count
        let objectsBefore = (concord: diskUsage(objectsOf: large.profile), git: diskUsage(objectsOf: large.clone))
        // With a baseline: the earlier binary's own 100k-record profile (no git side), its puts timed in turns with these.
        let baselineLarge = try context.baseline.map { try $0.context.sharedProfile(records: recordCount) }
        let (concord, git, baseline) = try large.timePuts(context, label: "B2", baseline: baselineLarge)
        let perPut = (concord: (diskUsage(objectsOf: large.profile) - objectsBefore.concord) / (context.runs + 1),
                      git: (diskUsage(objectsOf: large.clone) - objectsBefore.git) / (context.runs + 1))

        let small = try PutDataset.build(context, name: "small", records: smallRecordCount)
        let (smallConcord, smallGit, _) = try small.timePuts(context, label: "B2 1k")

        let scenario = context.scenario
        let headline = ResultRow(label: "B2 put 1 record into 100k (git: write file + add + commit)",
                                 concord: concord, git: git, target: scenario.targetRatio)
        let growth = concord.median - smallConcord.median
        let indexSize = (try? FileManager.default.attributesOfItem(atPath: large.profile.appendingPathComponent(".git/index").path)[.size]
            as? Int) ?? 0
        let decision = "**Decision: data format 2 puts records in 256 bucket directories** (`vocabulary/<bucket>/<id>.json`, "
            + "docs/data-format.md). With one flat directory (format 1) the kind tree at 100k records was a 3.8 MiB object "
            + "that every put read, rebuilt, hashed and wrote (measured then: 463 ms per put, ratio 1.02). Now a put writes the "
            + "\(Format.bytes(treeSize)) kind tree and one \(Format.bytes(bucketSize)) bucket tree. Going from "
            + "\(Format.count(smallRecordCount)) to \(Format.count(recordCount)) records still adds "
            + "\(Format.duration(growth)) per put (\(Format.duration(smallConcord.median)) → \(Format.duration(concord.median))): "
            + "the \(Format.bytes(indexSize)) index, which concord patches in place (read, splice, one SHA-1, write) "
            + "rather than rebuilding, and which git also reads and writes in full."
        return ScenarioResult(
            scenario: scenario,
            rows: [
                headline,
                ResultRow(label: "B2 scale reference: same put into a 1k-record profile", concord: smallConcord, git: smallGit),
            ] + context.baselineRows(("B2 concord put into 100k, this build vs an earlier one", concord, baseline),
                                     target: BenchContext.baselineTarget),
            notes: [
                "Data: an `aac` profile with \(Format.count(recordCount)) `vocabulary` records (in 256 bucket directories), built "
                    + "once and not timed: `concord import` took \(Format.duration(large.importSeconds)), `git clone` of the "
                    + "profile (the git side) \(Format.duration(large.cloneSeconds)). The 1k reference row is built and timed "
                    + "the same way.",
                "concord: `concord put -C p vocabulary/<id> --json '{...}'`, one process timed from launch to exit "
                    + "(open, read the old record, signed commit, working tree file and index). One `CONCORD_HOME` for "
                    + "all runs: the writer must be the profile's member.",
                "git: writing the same bytes concord wrote for that record (in-process), then `git add <file>` and "
                    + "`git commit -q -m …` as two processes, in the clone.",
                "Each run changes a different record; one untimed warm-up run per side comes first. Checks: exit status 0, "
                    + "exactly one new commit per run, identical `vocabulary` trees on both sides afterwards, and a clean "
                    + "`git status` in both.",
                "Runs (100k): concord \(Format.runs(concord)); git \(Format.runs(git)). "
                    + "Runs (1k): concord \(Format.runs(smallConcord)); git \(Format.runs(smallGit)).",
            ] + context.baselineNotes({ binary in
                "the same puts (same records, same data, one untimed warm-up first) by the earlier binary \(binary) into "
                    + "the \(Format.count(recordCount))-record profile it imported itself (not timed); checks: one new commit "
                    + "per put and a clean `git status` afterwards"
            }, runs: [("100k", baseline)]),
            findings: [
                "**Tree sizes at 100k records.** `git cat-file -s HEAD:vocabulary` = \(Format.count(treeSize)) bytes "
                    + "(256 bucket entries); one bucket tree = \(Format.count(bucketSize)) bytes (\(Format.count(bucketEntries)) "
                    + "records). Measured growth of `.git/objects` per put: concord \(Format.bytes(perPut.concord)), git "
                    + "\(Format.bytes(perPut.git)) (loose objects, before any repack).",
                decision,
            ])
    }

    /// Bytes in `.git/objects` of `repository` (file sizes).
    static func diskUsage(objectsOf repository: URL) -> Int {
        let objects = repository.appendingPathComponent(".git/objects")
        guard let walker = FileManager.default.enumerator(at: objects, includingPropertiesForKeys: [.fileSizeKey]) else { return 0 }
        var total = 0
        for case let url as URL in walker {
            total += (try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        return total
    }
}

/// The shared profile of `records` vocabulary records (made by `concord import`), and a `git clone` of it.
private struct PutDataset {
    let records: Int
    let home: URL
    let profile: URL
    let clone: URL
    let importSeconds: Double
    let cloneSeconds: Double

    static func build(_ context: BenchContext, name: String, records: Int) throws -> PutDataset {
        let shared = try context.sharedProfile(records: records)
        let clone = try context.sharedGitClone(records: records)
        return PutDataset(records: records, home: shared.home, profile: shared.profile, clone: clone.repository,
                          importSeconds: shared.importSeconds, cloneSeconds: clone.cloneSeconds)
    }

    /// One untimed warm-up, then `context.runs` timed puts on each side, each to a different
    /// record; checks both sides end with the same tree and a clean status. With `baseline` (the
    /// earlier binary's own profile of as many records), its puts of the same records too, the two
    /// binaries taking turns going first.
    func timePuts(_ context: BenchContext, label: String,
                  baseline: SharedDatasets.Profile? = nil) throws -> (concord: Samples, git: Samples, baseline: Samples) {
        var concord = Samples(), git = Samples(), baselineSamples = Samples()
        for run in 0...context.runs {
            let step = run == 0 ? "warm-up" : "\(run)/\(context.runs)"
            try context.inTurn(run: run, with: baseline, {
                let (put, path) = try Self.put(context, into: profile, home: home, records: records, run: run,
                                               label: "\(label) concord run \(step)")

                // The git side commits the very bytes concord just wrote, at the same path.
                context.progress("\(label) git run \(step): write file + git add + git commit")
                let bytes = try Data(contentsOf: profile.appendingPathComponent(path))
                let gitBefore = try context.git.commitCount(clone)
                let write = try measure { try VocabularyData.writeFile(bytes, to: clone.appendingPathComponent(path).path) }.seconds
                let add = try context.git.run(["add", path], in: clone, what: "git add")
                let commit = try context.git.run(["commit", "-q", "-m", "\(path): updated"], in: clone, what: "git commit")
                try context.git.expectOneMoreCommit(clone, than: gitBefore, after: "git add && git commit")
                if run > 0 {
                    concord.append(put)
                    git.append(write + add.seconds + commit.seconds)
                }
            }, baseline: { other, shared in
                let (put, _) = try Self.put(other.context, into: shared.profile, home: shared.home, records: shared.records, run: run,
                                            label: "\(label) baseline run \(step) (\(other.binary))")
                if run > 0 { baselineSamples.append(put) }
            })
        }
        if let other = context.baseline, let baseline {
            try Self.expectCleanStatus(other.context, baseline.profile, name: "the baseline's profile")
        }

        // Same record bytes on both sides must give the same tree; both working trees must be clean.
        let concordTree = try context.git.resolve("HEAD:\(VocabularyData.kind)", in: profile)
        let gitTree = try context.git.resolve("HEAD:\(VocabularyData.kind)", in: clone)
        guard concordTree == gitTree else {
            throw BenchError("after the puts concord's vocabulary tree is \(concordTree) but git's is \(gitTree): the sides diverged")
        }
        for (name, repository) in [("concord's profile", profile), ("the git clone", clone)] {
            try Self.expectCleanStatus(context, repository, name: name)
        }
        return (concord, git, baselineSamples)
    }

    /// Run `run`'s `concord put` (a different record each run) into `profile` of `records` records as
    /// `home`'s identity, checked to add one commit; its seconds and the record file's path.
    static func put(_ context: BenchContext, into profile: URL, home: URL, records: Int, run: Int,
                    label: String) throws -> (seconds: Double, path: String) {
        let index = (run * 7_919 + 4_241) % records
        let id = VocabularyData.id(index)
        context.progress("\(label): concord put \(VocabularyData.kind)/\(id)")
        let json = String(decoding: JSONValue.object(VocabularyData.data(index, revision: run + 1)).canonicalLine(), as: UTF8.self)
        let before = try context.git.commitCount(profile)
        let put = try context.concord.run(["put", "-C", profile.path, "\(VocabularyData.kind)/\(id)", "--json", json],
                                          home: home, what: "concord put")
        try context.git.expectOneMoreCommit(profile, than: before, after: "concord put")
        return (put.seconds, RecordPaths.file(directory: VocabularyData.kind, id: id))
    }

    static func expectCleanStatus(_ context: BenchContext, _ repository: URL, name: String) throws {
        let status = try context.git.status(repository)
        guard status.isEmpty else {
            throw BenchError("git status in \(name) is not clean after the puts:\n\(status.split(separator: "\n").prefix(10).joined(separator: "\n"))")
        }
    }
}
