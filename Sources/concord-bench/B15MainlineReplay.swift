import ConcordGit
import ConcordKit
import Foundation

/// B15: the mainline replay (`MembershipResolution.replayOnMainline`, pure) and the membership
/// resolution of a merge it feeds (`MembershipResolution.compute`: the side's decisions read from git
/// in side order, then replayed onto the main line's membership), on a side branch carrying D
/// membership decisions (two Admins' offline lines merged into each other along the way) that joins a
/// main line which moved meanwhile, at two sizes. In this process through the library. The git
/// column of the resolution row is git reading the same side's changes to member and invitation files
/// (`git log -p --no-merges --reverse --topo-order main..side -- .concord/members .concord/invitations`: the
/// same diffs, no signature checked, nothing judged); the replay alone has no git counterpart.
enum MainlineReplayBenchmark {
    static let sizes = [100, 1_000]
    /// Each round carol and dave each make `perDevice` role changes on the side remote (dave's sync
    /// merges carol's), and alice makes one on the main remote.
    static let perDevice = 10
    /// Members whose roles the Admins flip: alice the first `mainNames`, carol and dave the rest (half each).
    static let throwaway = (0..<20).map { String(format: "t%02d", $0) }
    static let mainNames = 4

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        var rows = [ResultRow](), runs = [String](), perDecision = [(size: Int, replay: Double, compute: Double)]()
        for size in sizes {
            let measured = try measure(context, decisions: size)
            let label = "\(Format.count(size)) side decisions (\(measured.sideMerges) merges on the side) onto a main line "
                + "of \(measured.mainDecisions) more"
            rows.append(ResultRow(label: "B15 membership resolution of a merge: \(label) vs git log -p of the side's member files",
                                  concord: measured.compute, git: measured.git))
            rows.append(ResultRow(label: "B15 mainline replay alone (replayOnMainline): \(label)",
                                  concordCell: Format.duration(measured.replay.median), gitCell: "—", ratio: .nan, targetCell: nil,
                                  met: nil, fastest: "replay \(Format.duration(measured.replay.fastest))"))
            rows.append(ResultRow(label: "B15 reading the side's decisions from git (side order, changes, signers): \(label)",
                                  concordCell: Format.duration(measured.read.median), gitCell: "—", ratio: .nan, targetCell: nil,
                                  met: nil, fastest: "read \(Format.duration(measured.read.fastest))"))
            runs.append("\(Format.count(size)): resolution \(Format.runs(measured.compute)); replay \(Format.runs(measured.replay)); "
                        + "read \(Format.runs(measured.read)); git \(Format.runs(measured.git))")
            perDecision.append((size, measured.replay.median / Double(size), measured.compute.median / Double(size)))
        }
        let (small, large) = (perDecision[0], perDecision[perDecision.count - 1])
        func verdict(_ growth: Double) -> String {
            "\(Format.ratio(growth))× " + (growth <= 1.25 ? "(linear or better)" : "(worse than linear)")
        }
        return ScenarioResult(
            scenario: context.scenario,
            rows: rows,
            notes: [
                "Set-up, not timed: an `aac` profile on a bare remote `origin` with alice (the creator), carol and dave (Admins) "
                    + "and \(throwaway.count) Viewers, each Admin with a clone, written through the library in this process. "
                    + "carol and dave also share a second bare remote, `side` (a copy of origin then). Each round carol makes "
                    + "\(perDevice) role changes (one commit each, a Viewer ↔ User flip of one of \(throwaway.count - mainNames)) and syncs "
                    + "with `side`, dave makes \(perDevice) and syncs with `side` (a merge of the two lines, itself resolved by this "
                    + "rule), carol syncs again (a fast-forward); alice makes one role change on origin. carol's clone then "
                    + "fetches origin's main (`git fetch`): the merge timed is origin's main (ours, the main line) with carol's "
                    + "line (theirs, the side).",
                "Timed, per run: `MembershipResolution.compute(in:base:ours:theirs:)` on carol's repository (the decisions read "
                    + "from git, then replayed onto the main line's membership, then the files it decides); "
                    + "`MembershipResolution.sideDecisions` alone (the side read in side order, each commit's change to member "
                    + "files and who signed it); `replayOnMainline` alone on those decisions and the main line's files (pure, "
                    + "no git). Every decision must stand (no Admin lost the right), and the side must hold exactly D decisions. "
                    + "This process already read these commits once (the set-up's syncs check and merge them, and the first run "
                    + "is a warm-up): the resolution's reads of changes and signatures come from the process's memo of them, as "
                    + "in a device that resolves a second merge.",
                "Per decision: " + perDecision.map { "\(Format.count($0.size)): replay \(microseconds($0.replay)), resolution "
                    + "\(microseconds($0.compute))" }.joined(separator: "; ") + ". Cost per decision at \(Format.count(large.size)) "
                    + "against \(Format.count(small.size)): replay \(verdict(large.replay / small.replay)), resolution "
                    + "\(verdict(large.compute / small.compute)).",
                "Runs: " + runs.joined(separator: "; ") + ".",
            ])
    }

    struct Measured {
        var compute = Samples(), replay = Samples(), read = Samples(), git = Samples()
        var sideMerges = 0, mainDecisions = 0
    }

    static func measure(_ context: BenchContext, decisions: Int) throws -> Measured {
        let root = context.path("history-\(decisions)")
        let devices = try LibraryDevice.make(context, in: root, members: [("alice", .admin), ("carol", .admin), ("dave", .admin)])
        let (alice, carol, dave) = (devices[0], devices[1], devices[2])
        for name in throwaway {
            try alice.profile.members.add(name, role: .viewer, device: "d", key: SigningKey.generate().publicKey, as: alice.identity)
        }
        try alice.sync()
        try carol.sync()
        try dave.sync()
        let side = root.appendingPathComponent("side.git")
        try context.copy(root.appendingPathComponent("origin.git"), to: side)
        for device in [carol, dave] { try device.profile.sync.addRemote("side", url: side.path) }

        context.progress("B15 preparing: \(Format.count(decisions)) side decisions, \(perDevice) a device a round")
        var roles = [String: Role]()
        func flip(_ device: LibraryDevice, _ name: String) throws {
            let role: Role = roles[name] == .user ? .viewer : .user
            roles[name] = role
            try device.profile.members.setRole(name, to: role, as: device.identity)
        }
        let sideNames = Array(throwaway.dropFirst(mainNames)), half = sideNames.count / 2
        let rounds = decisions / (2 * perDevice)
        for round in 0..<rounds {
            for step in 0..<perDevice { try flip(carol, sideNames[(round * perDevice + step) % half]) }
            try carol.sync("side")
            for step in 0..<perDevice { try flip(dave, sideNames[half + (round * perDevice + step) % half]) }
            let merged = try dave.sync("side")
            guard merged.received == perDevice, merged.sent >= 1 else {
                throw BenchError("B15 round \(round): dave's sync with side received \(merged.received) and sent \(merged.sent) commits, "
                                 + "expected \(perDevice) and a merge")
            }
            try carol.sync("side")
            try flip(alice, throwaway[round % mainNames])
            if round % 10 == 9 { context.progress("B15 preparing: \(Format.count((round + 1) * 2 * perDevice)) decisions") }
        }
        try alice.sync()
        try context.git.run(["fetch", "-q", root.appendingPathComponent("origin.git").path, "main:refs/bench/main"], in: carol.directory,
                            what: "git fetch origin's main (carol)")
        let ours = try context.git.resolve("refs/bench/main", in: carol.directory)
        let theirs = try context.git.resolve("HEAD", in: carol.directory)
        let base = try context.git.run(["merge-base", ours, theirs], in: carol.directory, what: "git merge-base")
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
        var measured = Measured()
        measured.sideMerges = try MergeSyncBenchmark.count(context, ["rev-list", "--merges", "--count", "\(ours)..\(theirs)"], in: carol.directory)
        measured.mainDecisions = try MergeSyncBenchmark.count(context, ["rev-list", "--no-merges", "--count", "\(theirs)..\(ours)"],
                                                              in: carol.directory)
        guard let oursID = ObjectID(hex: ours), let theirsID = ObjectID(hex: theirs), let baseID = ObjectID(hex: base) else {
            throw BenchError("B15: no commit ids for the merge (ours \(ours), theirs \(theirs), base \(base))")
        }
        let repository = try Repository.open(carol.directory.path)
        let mainline = try MembershipResolution.authorityFiles(try repository.commit(oursID).tree, repository)
        let gitArguments = ["log", "-p", "--no-merges", "--reverse", "--topo-order", "--format=%H", "\(ours)..\(theirs)", "--", ".concord/members",
                            ".concord/invitations"]
        let caches = EngineCaches()   // one engine's, as a device's: warm after the warm-up run
        for run in 0...context.runs {
            context.progress("B15 \(Format.count(decisions)) decisions, run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            var resolution = MembershipResolution.none, side = [MembershipResolution.SideDecision]()
            var outcome = MembershipResolution.MainlineOutcome?.none
            let computed = try IndexBenchmark.timed {
                resolution = try MembershipResolution.compute(in: repository, base: baseID, ours: oursID, theirs: theirsID, caches: caches)
            }
            let read = try IndexBenchmark.timed { side = try MembershipResolution.sideDecisions(of: theirsID, joining: oursID, in: repository, caches: caches) }
            let replayed = try IndexBenchmark.timed { outcome = MembershipResolution.replayOnMainline(mainline, side: side, files: caches.memberFiles) }
            let logged = try context.git.run(gitArguments, in: carol.directory, what: "git log -p of the side's member files")
            guard side.count == decisions, let outcome, outcome.fallen.isEmpty, resolution.fallen.isEmpty else {
                throw BenchError("B15: the side holds \(side.count) decisions (expected \(decisions)); fallen in the replay "
                                 + "\(outcome?.fallen.map(\.line) ?? []), in the resolution \(resolution.fallen.map(\.line))")
            }
            let gitCommits = logged.output.split(separator: "\n").filter { $0.count == 40 && $0.allSatisfy(\.isHexDigit) }.count
            guard gitCommits == decisions else { throw BenchError("B15: git log -p listed \(gitCommits) commits, not \(decisions)") }
            guard run > 0 else { continue }
            measured.compute.append(computed)
            measured.read.append(read)
            measured.replay.append(replayed)
            measured.git.append(logged.seconds)
        }
        return measured
    }
}
