import ConcordKit
import Foundation

/// B18: a merge whose side holds N record writes by a member the main line demoted meanwhile, at two
/// sizes: every side commit is judged where it lands (`RightsTakenAway`: the side's landings, each
/// commit's change and signer, the kinds there) and every write is left out. Timed through the library
/// in this process (`Sync.merge(revision:as:)`: the policy merge, the rule, the merge commit and the
/// working tree), against `git merge-tree --write-tree` of the same two commits (the same trees merged,
/// nothing judged) on the same repository in the same run.
enum RightsTakenAwayBenchmark {
    static let sizes = [100, 1_000]

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        var rows = [ResultRow](), runs = [String](), perCommit = [(size: Int, merge: Double, git: Double)]()
        for size in sizes {
            let (merge, git) = try measure(context, writes: size)
            rows.append(ResultRow(label: "B18 a merge leaving out \(Format.count(size)) side writes of a member the main line demoted "
                                      + "(Sync.merge) vs git merge-tree --write-tree", concord: merge, git: git))
            runs.append("\(Format.count(size)): merge \(Format.runs(merge)); git \(Format.runs(git))")
            perCommit.append((size, merge.median / Double(size), git.median / Double(size)))
        }
        let (small, large) = (perCommit[0], perCommit[perCommit.count - 1])
        let growth = large.merge / small.merge
        return ScenarioResult(
            scenario: context.scenario,
            rows: rows,
            notes: [
                "Set-up, not timed: an `aac` profile on a bare remote, alice (the creator) and eddie (an Editor) each with a clone, "
                    + "written through the library in this process. eddie puts N vocabulary records, one commit each, without "
                    + "syncing; alice demotes him to Viewer and syncs; alice's clone fetches eddie's main (`git fetch`).",
                "Timed, per run, on a fresh `cp -a` of alice's clone: `profile.sync.merge(revision:)` of eddie's line (a side: "
                    + "alice's main first), which must leave out exactly N writes, all lost to the demotion; and "
                    + "`git merge-tree --write-tree` of the same two commits in a process.",
                "Per side commit: " + perCommit.map {
                    "\(Format.count($0.size)): merge \(microseconds($0.merge)), git \(microseconds($0.git))"
                }.joined(separator: "; ") + ". The merge's cost per side commit at \(Format.count(large.size)) is "
                    + "\(Format.ratio(growth))× its cost at \(Format.count(small.size)): "
                    + (growth <= 1.25 ? "linear or better." : "worse than linear."),
                "Runs: " + runs.joined(separator: "; ") + ".",
            ])
    }

    static func microseconds(_ seconds: Double) -> String { String(format: "%.1f µs", seconds * 1e6) }

    static func measure(_ context: BenchContext, writes: Int) throws -> (merge: Samples, git: Samples) {
        let root = context.path("side-\(writes)")
        let devices = try LibraryDevice.make(context, in: root, members: [("alice", .admin), ("eddie", .editor)])
        let (alice, eddie) = (devices[0], devices[1])
        context.progress("B18 preparing: \(Format.count(writes)) side writes")
        for index in 0..<writes { try eddie.put(index) }
        try alice.profile.members.setRole("eddie", to: .viewer, as: alice.identity)
        try alice.sync()
        try context.git.run(["fetch", "-q", eddie.directory.path, "main:refs/bench/side"], in: alice.directory, what: "git fetch eddie's main (alice)")
        let head = try context.git.resolve("HEAD", in: alice.directory)
        var merge = Samples(), git = Samples()
        for run in 0...context.runs {
            context.progress("B18 \(Format.count(writes)) side writes, run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            let copy = root.appendingPathComponent("alice-run-\(run)")
            try context.copy(alice.directory, to: copy)
            let device = try LibraryDevice.open(home: alice.home, directory: copy)
            var report: MergeReport?
            let merged = try IndexBenchmark.timed { report = try device.profile.sync.merge(revision: "refs/bench/side", as: device.identity) }
            let leftOut = report?.leftOut ?? []
            guard leftOut.count == writes, leftOut.allSatisfy({ $0.cause == .rightsLowered && $0.member == "eddie" }) else {
                throw BenchError("B18: the merge left out \(leftOut.count) writes (expected \(writes), all eddie's, lost to his demotion)")
            }
            let tree = try context.git.run(["merge-tree", "--write-tree", head, "refs/bench/side"], in: copy, what: "git merge-tree --write-tree")
            try FileManager.default.removeItem(at: copy)
            guard run > 0 else { continue }
            merge.append(merged)
            git.append(tree.seconds)
        }
        return (merge, git)
    }
}
