import ConcordKit
import Foundation

extension Scenario {
    /// B2: one `concord put` into a 100,000-record profile vs writing the file, `git add` and
    /// `git commit` in a clone of the same repository; also the size of the flat kind tree.
    static let putIntoHundredThousand = Scenario(
        id: "B2", title: "put one record into a 100,000-record profile", targetRatio: 0.5, run: PutBenchmark.run)
}

private enum PutBenchmark {
    static let recordCount = 100_000
    /// A small profile timed the same way, to show which part of a put grows with the profile.
    static let smallRecordCount = 1_000

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let large = try PutDataset.build(context, name: "large", records: recordCount)
        let treeSize = try context.git.objectSize("HEAD:\(VocabularyData.kind)", in: large.profile)
        let treeEntries = try context.git.run(["ls-tree", "HEAD:\(VocabularyData.kind)"], in: large.profile, what: "git ls-tree")
            .output.split(separator: "\n").count
        let objectsBefore = (concord: diskUsage(objectsOf: large.profile), git: diskUsage(objectsOf: large.clone))
        let (concord, git) = try large.timePuts(context, label: "B2")
        let perPut = (concord: (diskUsage(objectsOf: large.profile) - objectsBefore.concord) / (context.runs + 1),
                      git: (diskUsage(objectsOf: large.clone) - objectsBefore.git) / (context.runs + 1))

        let small = try PutDataset.build(context, name: "small", records: smallRecordCount)
        let (smallConcord, smallGit) = try small.timePuts(context, label: "B2 1k")

        let scenario = Scenario.putIntoHundredThousand
        let headline = ResultRow(label: "B2 put 1 record into 100k (git: write file + add + commit)",
                                 concord: concord, git: git, target: scenario.targetRatio)
        let fanOut = fanOutTreeSizes(entries: treeEntries, flatSize: treeSize)
        let growth = concord.median - smallConcord.median
        let decision = headline.met == true
            ? "**Decision: keep kind directories flat for now.** The put meets its target at 100k records even though "
                + "each commit rewrites the whole \(Format.bytes(treeSize)) tree; what grows is storage (above)."
            : "**Decision: flat misses the target at 100k records.** Going from \(Format.count(smallRecordCount)) to "
                + "\(Format.count(recordCount)) records adds \(Format.duration(growth)) to every put "
                + "(\(Format.duration(smallConcord.median)) → \(Format.duration(concord.median))); that growth is "
                + "reading, rebuilding, hashing and compressing the \(Format.bytes(treeSize)) tree plus reading and "
                + "writing the index. A fan-out removes the tree part but not the index part. Format 1 keeps the flat "
                + "`<kind>/<id>.json` layout anyway: it is what the data format promises to plain git users, hand edits, "
                + "`.gitattributes` patterns and other implementations, and profiles of the apps served hold hundreds "
                + "to a few thousand records per kind, where a put costs tens of milliseconds. A fan-out is the planned "
                + "change for a format 2 when kinds of 100k records become real."
        return ScenarioResult(
            scenario: scenario,
            rows: [
                headline,
                ResultRow(label: "B2 scale reference: same put into a 1k-record profile", concord: smallConcord, git: smallGit),
            ],
            notes: [
                "Data: an `aac` profile with \(Format.count(recordCount)) `vocabulary` records in one flat directory, built "
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
            ],
            findings: [
                "**Flat kind directory at 100k records.** `git cat-file -s HEAD:vocabulary` = \(Format.count(treeSize)) bytes "
                    + "(\(Format.bytes(treeSize)), \(Format.count(treeEntries)) entries). Every commit that touches one record "
                    + "writes a new copy of this tree. Measured growth of `.git/objects` per put: concord "
                    + "\(Format.bytes(perPut.concord)), git \(Format.bytes(perPut.git)) (loose objects, before any repack; "
                    + "the 20-byte ids in a tree barely compress). That is ~\(Format.bytes(perPut.concord * 1_000)) per "
                    + "1,000 puts until a repack delta-compresses the trees, and libgit2 has no gc of its own.",
                "For comparison (computed, not measured): a 2-hex-character fan-out (`vocabulary/ab/<id>.json`, 256 "
                    + "subtrees of ~\(treeEntries / 256) entries) would make each put write a \(Format.bytes(fanOut.top)) "
                    + "top tree plus a \(Format.bytes(fanOut.leaf)) leaf tree instead of \(Format.bytes(treeSize)).",
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

    /// Tree sizes under a 256-way fan-out, from the flat tree's average entry size.
    static func fanOutTreeSizes(entries: Int, flatSize: Int) -> (top: Int, leaf: Int) {
        let treeEntry = "40000 ".utf8.count + 2 + 1 + 20
        let averageEntry = entries > 0 ? flatSize / entries : 0
        return (256 * treeEntry, (entries + 255) / 256 * averageEntry)
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
        let shared = try context.shared.profile(records: records) { context.progress("B2 \($0)") }
        let clone = try context.shared.gitClone(records: records) { context.progress("B2 \($0)") }
        return PutDataset(records: records, home: shared.home, profile: shared.profile, clone: clone.repository,
                          importSeconds: shared.importSeconds, cloneSeconds: clone.cloneSeconds)
    }

    /// One untimed warm-up, then `context.runs` timed puts on each side, each to a different
    /// record; checks both sides end with the same tree and a clean status.
    func timePuts(_ context: BenchContext, label: String) throws -> (concord: Samples, git: Samples) {
        var concord = Samples(), git = Samples()
        for run in 0...context.runs {
            let index = (run * 7_919 + 4_241) % records
            let id = VocabularyData.id(index)
            let path = "\(VocabularyData.kind)/\(id).json"
            let step = run == 0 ? "warm-up" : "\(run)/\(context.runs)"

            context.progress("\(label) concord run \(step): concord put \(VocabularyData.kind)/\(id)")
            let json = String(decoding: JSONValue.object(VocabularyData.data(index, revision: run + 1)).canonicalLine(), as: UTF8.self)
            let concordBefore = try context.git.commitCount(profile)
            let put = try context.concord.run(["put", "-C", profile.path, "\(VocabularyData.kind)/\(id)", "--json", json],
                                              home: home, what: "concord put")
            try context.git.expectOneMoreCommit(profile, than: concordBefore, after: "concord put")

            // The git side commits the very bytes concord just wrote, at the same path.
            context.progress("\(label) git run \(step): write file + git add + git commit")
            let bytes = try Data(contentsOf: profile.appendingPathComponent(path))
            let gitBefore = try context.git.commitCount(clone)
            let write = try measure { try VocabularyData.writeFile(bytes, to: clone.appendingPathComponent(path).path) }.seconds
            let add = try context.git.run(["add", path], in: clone, what: "git add")
            let commit = try context.git.run(["commit", "-q", "-m", "\(path): updated"], in: clone, what: "git commit")
            try context.git.expectOneMoreCommit(clone, than: gitBefore, after: "git add && git commit")
            if run > 0 {
                concord.append(put.seconds)
                git.append(write + add.seconds + commit.seconds)
            }
        }

        // Same record bytes on both sides must give the same tree; both working trees must be clean.
        let concordTree = try context.git.resolve("HEAD:\(VocabularyData.kind)", in: profile)
        let gitTree = try context.git.resolve("HEAD:\(VocabularyData.kind)", in: clone)
        guard concordTree == gitTree else {
            throw BenchError("after the puts concord's vocabulary tree is \(concordTree) but git's is \(gitTree): the sides diverged")
        }
        for (name, repository) in [("concord's profile", profile), ("the git clone", clone)] {
            let status = try context.git.status(repository)
            guard status.isEmpty else {
                throw BenchError("git status in \(name) is not clean after the puts:\n\(status.split(separator: "\n").prefix(10).joined(separator: "\n"))")
            }
        }
        return (concord, git)
    }
}
