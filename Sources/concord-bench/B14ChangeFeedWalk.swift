import ConcordGit
import ConcordEngine
import ConcordKit
import Foundation

/// B14: the change feed's walk (`History.commitsAfter(_:upTo:)`, which `ConcordStore.changes(since:)`
/// runs for each batch it tells) from a token N commits back to main, along a history whose merges
/// are real sync merges, at two sizes, against git's own first-parent walk of the same range
/// (`git rev-list --first-parent token..head`) in the same run. In this process through the library
/// (a process start would hide the walk); the git side is a process, start-up included.
enum ChangeFeedWalkBenchmark {
    static let sizes = [1_000, 10_000]
    /// Every round alice writes `round - 1` commits and syncs, carol writes one and syncs (a merge
    /// whose first parent is the remote's main), alice syncs again (a fast-forward to the merge).
    static let round = 50

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let scaling = try SizeScaling(sizes, runs: "walk") { try measure(context, commits: $0) }
        return scaling.result(context, notes: [
            "Set-up, not timed: an `aac` profile on a bare remote, alice (the creator) and carol (an Editor) each with a clone, "
                + "written through the library in this process. Each round alice writes \(round - 1) one-record commits and syncs, "
                + "carol writes one and syncs (a merge whose first parent is the remote's main, the mainline rule), alice syncs "
                + "(a fast-forward to the merge): \(round) first-parent commits a round, one of them a merge. The token is "
                + "alice's main before the first round.",
            "Timed, per run: `profile.history.commitsAfter(token, upTo: head)` in alice's clone (it reads each commit on the "
                + "way and, at each merge, asks which parent has the token as an ancestor), which must list exactly the "
                + "commits of `git rev-list --first-parent token..head`; and that git command, in a process.",
            scaling.costNote("Per commit: ", subject: "The walk", unit: "commit",
                             worse: "worse than linear (each merge's ancestor question walks down to the token)."),
            scaling.runsNote,
        ])
    }

    /// The walk and git's over a history of `commits` first-parent commits since the token, and their row's label.
    static func measure(_ context: BenchContext, commits: Int) throws -> (label: String, concord: Samples, git: Samples) {
        let devices = try LibraryDevice.make(context, in: context.path("history-\(commits)"),
                                             members: [("alice", .admin), ("carol", .editor)])
        let (alice, carol) = (devices[0], devices[1])
        let token = try context.git.resolve("HEAD", in: alice.directory)
        context.progress("B14 preparing: \(Format.count(commits)) first-parent commits, one merge in \(round)")
        for index in 0..<(commits / round) {
            for write in 0..<(round - 1) { try alice.put(index * round + write) }
            try alice.sync()
            try carol.put(1_000_000 + index)
            let merged = try carol.sync()
            guard merged.received >= 1, merged.sent >= 1 else {
                throw BenchError("B14 round \(index): carol's sync received \(merged.received) and sent \(merged.sent) commits, "
                                 + "expected alice's commits in and a merge out")
            }
            try alice.sync()
            if index % 40 == 39 { context.progress("B14 preparing: \(Format.count((index + 1) * round)) commits") }
        }
        let head = try context.git.resolve("HEAD", in: alice.directory)
        let expected = try context.git.run(["rev-list", "--first-parent", "\(token)..\(head)"], in: alice.directory,
                                           what: "git rev-list --first-parent").output.split(separator: "\n").map(String.init)
        let merges = try MergeSyncBenchmark.count(context, ["rev-list", "--first-parent", "--merges", "--count", "\(token)..\(head)"],
                                                  in: alice.directory)
        guard expected.count == commits, merges == commits / round, let tokenID = ObjectID(hex: token), let headID = ObjectID(hex: head) else {
            throw BenchError("B14: git lists \(expected.count) first-parent commits since the token, expected \(commits) (\(merges) merges, expected \(commits / round))")
        }
        var walk = Samples(), git = Samples()
        for run in 0...context.runs {
            context.progress("B14 \(Format.count(commits)) commits, run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            let history = try Profile.open(at: alice.directory, environment: ConcordEnvironment(home: alice.home)).history
            var chain: [(commit: Commit, parent: ObjectID?)]?
            let walked = try IndexBenchmark.timed { chain = try history.commitsAfter(tokenID, upTo: headID) }
            let listed = try context.git.run(["rev-list", "--first-parent", "\(token)..\(head)"], in: alice.directory,
                                             what: "git rev-list --first-parent")
            guard let chain, chain.map(\.commit.id.hex) == expected.reversed() else {
                throw BenchError("B14: commitsAfter listed \(chain?.count ?? -1) commits, not git's \(expected.count) first-parent commits")
            }
            guard listed.output.split(separator: "\n").count == commits else { throw BenchError("B14: git rev-list listed another count") }
            if run > 0 { walk.append(walked); git.append(listed.seconds) }
        }
        return ("B14 change feed walk: \(Format.count(commits)) first-parent commits since a token "
                    + "(\(merges) of them merges) vs git rev-list --first-parent token..head", walk, git)
    }
}
