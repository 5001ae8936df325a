import Foundation

/// One benchmark: an id (B1, B2, ...), what it compares, the target for concord/git, and the code
/// that measures it. Add a scenario by writing its code in its own file and listing it in `all`.
struct Scenario: Sendable {
    let id: String
    let title: String
    /// The target of the headline row: the largest acceptable ratio (concord/git, or for B6 100k/1k);
    /// for B4 and B9, the largest acceptable p95 latency in seconds.
    let targetRatio: Double
    let run: @Sendable (BenchContext) throws -> ScenarioResult

    /// Every scenario, in report order. Each row's file says what it measures.
    static let all: [Scenario] = [
        Scenario(id: "B1", title: "import 10,000 records as one commit", targetRatio: 0.2, run: ImportBenchmark.run),
        Scenario(id: "B2", title: "put one record into a 100,000-record profile", targetRatio: 0.5, run: PutBenchmark.run),
        Scenario(id: "B3", title: "merge 1,000 conflicting records in a 10,000-record profile", targetRatio: 0.1,
                 run: MergeBenchmark.run),
        Scenario(id: "B4", title: "propagation between two watching devices over ssh", targetRatio: 2.0,
                 run: PropagationBenchmark.run),
        Scenario(id: "B4S", title: "propagation between two watching devices through concord serve (live updates)", targetRatio: 0.5,
                 run: PropagationBenchmark.runThroughServe),
        Scenario(id: "B5", title: "clone a 10,000-record profile from a local bare repository", targetRatio: 1.5,
                 run: CloneBenchmark.run),
        Scenario(id: "B6", title: "sync receiving 10 changed records: 1,000 vs 100,000 records", targetRatio: 1.5,
                 run: SyncScalingBenchmark.run),
        Scenario(id: "B7", title: "verifying 10,000 received commits; concord verify vs git's signature check", targetRatio: 0.05,
                 run: VerificationBenchmark.run),
        Scenario(id: "B8", title: "a 10-record push and fetch through concord serve vs a stock sshd + git", targetRatio: 1.2,
                 run: ServePushFetchBenchmark.run),
        Scenario(id: "B9", title: "key lookup per connection and authorized_keys rewrite at 1,000 profiles × 10 members",
                 targetRatio: 0.010, run: KeyLookupBenchmark.run),
        Scenario(id: "B10", title: "the record index at 100,000 records: a 50-record query, opening, the update after a sync, a rebuild",
                 targetRatio: .nan, run: IndexBenchmark.run),
        Scenario(id: "B10O", title: "observe: a local write reaches its observer", targetRatio: ObserveBenchmark.p95Target,
                 run: ObserveBenchmark.run),
        Scenario(id: "B12", title: "the audit of one record at 100,000 commits: concord log --record and history vs git log -- <file>",
                 targetRatio: .nan, run: AuditBenchmark.run),
        Scenario(id: "B13", title: "sync receiving 100 merge commits (10 merging membership changes) vs 100 ordinary commits",
                 targetRatio: MergeSyncBenchmark.ratioTarget, run: MergeSyncBenchmark.run),
        Scenario(id: "B14", title: "the change feed's walk since a token over 1,000 and 10,000 first-parent commits with merges vs git rev-list --first-parent",
                 targetRatio: .nan, run: ChangeFeedWalkBenchmark.run),
        Scenario(id: "B15", title: "the mainline replay and the membership resolution of a merge: 100 and 1,000 side decisions",
                 targetRatio: .nan, run: MainlineReplayBenchmark.run),
        Scenario(id: "B16", title: "get logs/<id> of two authors' entries (LogArrival) 1,000 and 10,000 commits apart vs git log --first-parent",
                 targetRatio: .nan, run: LogArrivalBenchmark.run),
        Scenario(id: "B17", title: "the record index with one NUL record at 3,000 and 30,000 records vs the clean kind and a full scan",
                 targetRatio: .nan, run: HostileIndexBenchmark.run),
        Scenario(id: "B18", title: "a merge leaving out 100 and 1,000 side writes of a member the main line demoted vs git merge-tree",
                 targetRatio: .nan, run: RightsTakenAwayBenchmark.run),
        Scenario(id: "B11", title: "a long-running watch: resident memory over idle polls and syncs", targetRatio: 2.0,
                 run: WatchSoakBenchmark.run),
        Scenario(id: "G1", title: "tree writes: Repository.writeTree vs bare git_tree_create_updated", targetRatio: .nan,
                 run: TreeWriteRows.run),
        Scenario(id: "G2", title: "pack writes: ObjectPack vs git_mempack + git_packbuilder", targetRatio: .nan,
                 run: PackWriteRows.run),
        Scenario(id: "G3", title: "index updates: IndexPatch vs git_index_read/add/write", targetRatio: .nan,
                 run: IndexUpdateRows.run),
        Scenario(id: "G4", title: "small-object deflate: SmallDeflater vs zlib level 1", targetRatio: .nan, run: DeflateRows.run),
        Scenario(id: "G5", title: "path-remote fetch and push: ObjectTransfer vs libgit2's local transport", targetRatio: .nan,
                 run: PathRemoteRows.run),
        Scenario(id: "G6", title: "checkout of 10k records: FileIO.writeAll vs git_checkout_tree", targetRatio: .nan,
                 run: CheckoutRows.run),
    ]
}

/// What a scenario measured: table rows (the first is the headline row with the target) and
/// markdown for the report.
struct ScenarioResult {
    let scenario: Scenario
    var rows: [ResultRow]
    /// What exactly is timed, one markdown bullet each.
    var notes: [String]
    /// Further measurements and decisions, as markdown paragraphs.
    var findings: [String] = []
}

/// One line of the results table, as shown. Most rows compare concord with git on the same work
/// (`init(label:concord:git:target:)`); `scaling` compares one tool on a small and a large profile,
/// and `latency` shows concord alone (no git counterpart) as percentiles.
struct ResultRow {
    let label: String
    let concordCell: String
    let gitCell: String
    /// The ratio column; NaN shows "—".
    let ratio: Double
    /// The target column ("≤ 0.20", "p95 ≤ 2.00 s"); nil marks an informational or reference row.
    let targetCell: String?
    let met: Bool?
    /// The same comparison on the fastest runs, for the report; nil leaves the row out of that list.
    let fastest: String?

    /// One tool's medians on a small and a large profile (in that tool's column, the other shows "—");
    /// ratio = large median / small median, met when at most `target`.
    static func scaling(label: String, tool: Tool, small: (name: String, samples: Samples),
                        large: (name: String, samples: Samples), target: Double? = nil) -> ResultRow {
        let ratio = large.samples.median / small.samples.median
        let cell = "\(small.name): \(Format.duration(small.samples.median)), \(large.name): \(Format.duration(large.samples.median))"
        let fastest = "\(tool.rawValue) \(small.name) \(Format.duration(small.samples.fastest)), \(large.name) "
            + "\(Format.duration(large.samples.fastest)), ratio \(Format.ratio(large.samples.fastest / small.samples.fastest))"
        return ResultRow(label: label, concordCell: tool == .concord ? cell : "—", gitCell: tool == .git ? cell : "—",
                         ratio: ratio, targetCell: target.map { "≤ " + Format.ratio($0) }, met: target.map { ratio <= $0 },
                         fastest: fastest)
    }

    /// concord alone, with no git counterpart: p50 and p95 of `samples` in the concord column, met
    /// when p95 is at most `p95Target` seconds.
    static func latency(label: String, samples: Samples, p95Target: Double) -> ResultRow {
        let p95 = samples.percentile(95)
        return ResultRow(label: label,
                         concordCell: "p50 \(Format.duration(samples.median)), p95 \(Format.duration(p95))",
                         gitCell: "—", ratio: .nan, targetCell: "p95 ≤ \(Format.duration(p95Target))", met: p95 <= p95Target,
                         fastest: nil)
    }

    enum Tool: String {
        case concord, git
    }
}

extension ResultRow {
    /// concord against git on the same work: medians, ratio = concord median / git median, met when
    /// the ratio is at most `target`.
    init(label: String, concord: Samples, git: Samples, target: Double? = nil) {
        let ratio = concord.median / git.median
        self.init(label: label, concordCell: Format.duration(concord.median), gitCell: Format.duration(git.median),
                  ratio: ratio, targetCell: target.map { "≤ " + Format.ratio($0) }, met: target.map { ratio <= $0 },
                  fastest: "concord \(Format.duration(concord.fastest)), git \(Format.duration(git.fastest)), "
                      + "ratio \(Format.ratio(concord.fastest / git.fastest))")
    }
}

/// The timings of several runs of one command, in seconds.
struct Samples {
    private(set) var values: [Double] = []

    mutating func append(_ seconds: Double) { values.append(seconds) }

    /// The fastest run: on a shared machine noise only ever adds time, so this is the least disturbed.
    var fastest: Double { values.min() ?? .nan }

    /// The nearest-rank percentile: the smallest value with at least `percent`% of the values at or below it.
    func percentile(_ percent: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    var median: Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func + (lhs: Samples, rhs: Samples) -> Samples {
        Samples(values: zip(lhs.values, rhs.values).map { $0 + $1 })
    }
}

/// What every scenario gets: the two tools, the run count, a private temporary directory, progress output.
struct BenchContext {
    /// The scenario running, whose id prefixes its progress lines.
    let scenario: Scenario
    let concord: ConcordCLI
    let git: GitCLI
    let runs: Int
    /// This scenario's own temporary directory. Nothing in it is deleted until the whole bench is
    /// done: on ext4, creating files soon after deleting many is slow (the inode allocator skips
    /// recently freed inodes), so deleting one run's files would slow down the next run.
    let directory: URL
    /// Profiles built once per bench run and shared by the scenarios that need them.
    let shared: SharedDatasets
    /// B11: idle polls, then syncs, of each soaked `watch` (`--soak-polls`, `--soak-syncs`).
    let soak: (polls: Int, syncs: Int)

    /// `--baseline`: the earlier binary's context (its own shared datasets and directory), for the
    /// scenarios that time it side by side with this one.
    var baseline: Baseline? = nil

    /// `this` (this build's work) for run `run`; with a baseline and its `prepared` data (what
    /// the scenario set up for it), also `baseline`'s work, before `this` on even runs and after
    /// it on odd ones: the two binaries take turns going first.
    func inTurn<Prepared>(run: Int, with prepared: Prepared?, _ this: () throws -> Void,
                          baseline work: (Baseline, Prepared) throws -> Void) rethrows {
        guard let other = baseline, let prepared else { return try this() }
        if run % 2 == 0 { try work(other, prepared) }
        try this()
        if run % 2 == 1 { try work(other, prepared) }
    }

    /// The rows comparing this build with the baseline (`Baseline.row`), one for each of `comparisons`
    /// (this build's samples and the baseline's of the same work), each met at most `target`; none
    /// without `--baseline`.
    func baselineRows(_ comparisons: (label: String, concord: Samples, baseline: Samples)..., target: Double) -> [ResultRow] {
        guard let other = baseline else { return [] }
        return comparisons.map { other.row($0.label, concord: $0.concord, baseline: $0.baseline, target: target) }
    }

    /// An earlier concord binary, timed against `concord` on the same work (on data it made itself).
    /// A class: a context holds at most one, which holds a context without one.
    final class Baseline {
        let context: BenchContext
        /// The binary's path (`make bench BASELINE=rev` builds it under `.build-baseline/rev/`).
        let binary: String

        init(context: BenchContext, binary: String) {
            self.context = context
            self.binary = binary
        }

        /// The row comparing this build with the baseline: medians, ratio = this / baseline, met at most `target`.
        func row(_ label: String, concord: Samples, baseline: Samples, target: Double) -> ResultRow {
            ResultRow(label: "\(label) (vs baseline `\(binary)`)", concord: concord, git: baseline, target: target)
        }
    }

    /// The shared profile of `records` vocabulary records, built on first use.
    func sharedProfile(records: Int) throws -> SharedDatasets.Profile {
        try shared.profile(records: records) { progress("\(scenario.id) \($0)") }
    }

    /// The plain `git clone` of the shared profile of `records` records, made on first use.
    func sharedGitClone(records: Int) throws -> SharedDatasets.GitClone {
        try shared.gitClone(records: records) { progress("\(scenario.id) \($0)") }
    }

    func path(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// `cp -a source destination`: an exact copy of a repository (work tree, index, refs, config).
    func copy(_ source: URL, to destination: URL) throws {
        try concord.runner.run("/bin/cp", ["-a", source.path, destination.path], environment: ProcessInfo.processInfo.environment,
                               what: "cp -a \(source.lastPathComponent) \(destination.lastPathComponent)")
    }

    /// Prints a progress line to standard error.
    func progress(_ line: String) {
        FileHandle.standardError.write(Data("\(line)\n".utf8))
    }
}
