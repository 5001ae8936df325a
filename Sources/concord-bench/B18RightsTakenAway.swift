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
        let scaling = try SizeScaling(sizes, runs: "merge") { try measure(context, writes: $0) }
        return scaling.result(context, notes: [
            "Set-up, not timed: an `aac` profile on a bare remote, alice (the creator) and eddie (an Editor) each with a clone, "
                + "written through the library in this process. eddie puts N vocabulary records, one commit each, without "
                + "syncing; alice demotes him to Viewer and syncs; alice's clone fetches eddie's main (`git fetch`).",
            "Timed, per run, on a fresh `cp -a` of alice's clone: `profile.sync.merge(revision:)` of eddie's line (a side: "
                + "alice's main first), which must leave out exactly N writes, all lost to the demotion; and "
                + "`git merge-tree --write-tree` of the same two commits in a process.",
            scaling.costNote("Per side commit: ", subject: "The merge", unit: "side commit"),
            scaling.runsNote,
        ])
    }

    /// The merge's and git's times with `writes` side writes left out, and their row's label.
    static func measure(_ context: BenchContext, writes: Int) throws -> (label: String, concord: Samples, git: Samples) {
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
        return ("B18 a merge leaving out \(Format.count(writes)) side writes of a member the main line demoted "
                    + "(Sync.merge) vs git merge-tree --write-tree", merge, git)
    }
}
