import ConcordEngine
import ConcordKit
import Foundation

/// B13: what receiving merge commits costs. Every merge a device receives is compared with the
/// policy merge of its parents, recomputed, and when both sides changed membership the membership
/// is found by replaying the history's decisions. A sync receiving 100 merge commits (10 of them
/// merging concurrent membership changes) must cost at most 2× the same sync with ordinary
/// one-record commits in the merges' places (as many commits in all: the merges cannot come
/// without the 200 commits they merge). The sync of 100 ordinary commits alone is a reference row.
enum MergeSyncBenchmark {
    static let merges = 100
    /// Every `membershipEvery`-th round both senders change membership instead of writing a record.
    static let membershipEvery = 10
    static let ordinaryCommits = 100
    static let ratioTarget = 2.0
    /// A sync is tens of milliseconds: more runs than the default, as in B6.
    static let minimumRuns = 11
    /// The remotes device B syncs with: the merge history, the 100 ordinary commits, and (references)
    /// as many ordinary commits as the merge history holds in all, and 100 merges of records only.
    static let remotes = (merges: "origin", ordinary: "ordinary", sameCount: "same-count", recordMerges: "record-merges")

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let setUp = try measure { try prepare(context) }
        let senders = setUp.value
        let runs = max(context.runs, minimumRuns)
        var mergeSync = Samples(), ordinarySync = Samples(), sameCountSync = Samples()
        var mergeCheck = Samples(), ordinaryCheck = Samples(), sameCountCheck = Samples()
        var mergeFetch = Samples(), ordinaryFetch = Samples(), recordMergeSync = Samples(), recordMergeCheck = Samples()
        var baselineRecordMerge = Samples()
        var baselineMerge = Samples(), baselineOrdinary = Samples(), baselineMergeCheck = Samples(), baselineOrdinaryCheck = Samples()
        for run in 0...runs {
            let step = run == 0 ? "warm-up" : "\(run)/\(runs)"
            // The four syncs take turns going first, run by run; with a baseline, its three syncs
            // (merges, 100 ordinary, record merges) go first on even runs and last on odd ones.
            var timed = [String: (sync: Double, fetched: Double, checked: Double)]()
            let order = [remotes.merges, remotes.ordinary, remotes.sameCount, remotes.recordMerges]
            var baselineTimed = [String: (sync: Double, fetched: Double, checked: Double)]()
            try context.inTurn(run: run, with: Optional(senders), {
                for offset in 0..<order.count {
                    let remote = order[(run + offset) % order.count]
                    let device = context.path("device-b-\(remote)-\(run)")
                    try context.copy(senders.pristineB, to: device)
                    context.progress("B13 run \(step): concord sync on B from \(remote)")
                    timed[remote] = try timeSync(context, context.concord, device: device, remote: remote, senders: senders)
                }
            }, baseline: { other, senders in
                let baselineOrder = [remotes.merges, remotes.ordinary, remotes.recordMerges]
                for offset in 0..<baselineOrder.count {
                    let remote = baselineOrder[(run + offset) % baselineOrder.count]
                    let device = other.context.path("device-b-\(remote)-\(run)")
                    try context.copy(senders.pristineB, to: device)
                    context.progress("B13 baseline run \(step): concord sync on B from \(remote) (\(other.binary))")
                    baselineTimed[remote] = try timeSync(context, other.context.concord, device: device, remote: remote, senders: senders)
                }
            })
            if run > 0, let merge = baselineTimed[remotes.merges], let ordinary = baselineTimed[remotes.ordinary],
               let recordMerge = baselineTimed[remotes.recordMerges] {
                baselineRecordMerge.append(recordMerge.sync)
                baselineMerge.append(merge.sync)
                baselineOrdinary.append(ordinary.sync)
                baselineMergeCheck.append(merge.checked)
                baselineOrdinaryCheck.append(ordinary.checked)
            }
            guard run > 0, let merge = timed[remotes.merges], let ordinary = timed[remotes.ordinary],
                  let sameCount = timed[remotes.sameCount], let recordMerge = timed[remotes.recordMerges] else { continue }
            recordMergeSync.append(recordMerge.sync)
            recordMergeCheck.append(recordMerge.checked)
            mergeSync.append(merge.sync)
            ordinarySync.append(ordinary.sync)
            sameCountSync.append(sameCount.sync)
            mergeCheck.append(merge.checked)
            ordinaryCheck.append(ordinary.checked)
            sameCountCheck.append(sameCount.checked)
            mergeFetch.append(merge.fetched)
            ordinaryFetch.append(ordinary.fetched)
        }

        // The bound: a merge commit costs at most twice an ordinary one. The denominator is the same
        // sync with ordinary commits in the merges' places: as many one-record commits as the merge
        // history holds (a merge history cannot be received without the commits it merges, so against
        // 100 commits alone it would measure the count of commits, three times as many, not merging).
        let ratio = mergeSync.median / sameCountSync.median
        let total = senders.commitsReceived[remotes.merges] ?? 0
        let headline = ResultRow(
            label: "B13 sync receiving \(merges) merge commits (\(merges / membershipEvery) merging concurrent membership changes; "
                + "\(Format.count(total)) new commits in all) vs the same sync with ordinary commits in the merges' places "
                + "(\(Format.count(total)) one-record commits; ratio = merges / ordinary)",
            concordCell: "merges: \(Format.duration(mergeSync.median)), \(Format.count(total)) ordinary: \(Format.duration(sameCountSync.median))",
            gitCell: "—", ratio: ratio, targetCell: "≤ " + Format.ratio(ratioTarget), met: ratio <= ratioTarget,
            fastest: "merges \(Format.duration(mergeSync.fastest)), ordinary \(Format.duration(sameCountSync.fastest)), "
                + "ratio \(Format.ratio(mergeSync.fastest / sameCountSync.fastest))")
        func row(_ label: String, _ first: (String, Samples), _ second: (String, Samples)) -> ResultRow {
            let ratio = first.1.median / second.1.median
            return ResultRow(label: label, concordCell: "\(first.0): \(Format.duration(first.1.median)), "
                                 + "\(second.0): \(Format.duration(second.1.median))",
                             gitCell: "—", ratio: ratio, targetCell: nil, met: nil,
                             fastest: "\(first.0) \(Format.duration(first.1.fastest)), \(second.0) \(Format.duration(second.1.fastest)), "
                                 + "ratio \(Format.ratio(first.1.fastest / second.1.fastest))")
        }
        var baselineRows = [ResultRow]()
        if let other = context.baseline {
            let versus = " (vs baseline `\(other.binary)`)"
            baselineRows = [
                ResultRow(label: "B13 sync receiving the merge history, this build vs an earlier one" + versus,
                          concord: mergeSync, git: baselineMerge),
                ResultRow(label: "B13 sync receiving the \(merges) merges of records only, this build vs an earlier one" + versus,
                          concord: recordMergeSync, git: baselineRecordMerge),
                ResultRow(label: "B13 sync receiving the \(ordinaryCommits) ordinary commits, this build vs an earlier one" + versus,
                          concord: ordinarySync, git: baselineOrdinary),
                ResultRow(label: "B13 the check step of the merge history, this build vs an earlier one" + versus,
                          concord: mergeCheck, git: baselineMergeCheck),
                row("B13 the earlier build's own ratio: merges / ordinary" + versus,
                    ("merges", baselineMerge), ("ordinary", baselineOrdinary)),
            ]
        }
        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                headline,
                row("B13 reference: the merge history (\(Format.count(total)) commits) vs a sync of \(ordinaryCommits) ordinary one-record "
                        + "commits, as many as the merges alone (ratio = merges / ordinary; most of it is the count of commits)",
                    ("merges", mergeSync), ("\(ordinaryCommits) ordinary", ordinarySync)),
                row("B13 reference: \(merges) merges of records only (no membership change; the same rounds) vs \(ordinaryCommits) "
                        + "ordinary commits (ratio = record merges / ordinary)",
                    ("record merges", recordMergeSync), ("ordinary", ordinarySync)),
                row("B13 the check step of the \(merges) merges of records only vs \(ordinaryCommits) ordinary commits",
                    ("record merges", recordMergeCheck), ("ordinary", ordinaryCheck)),
                row("B13 the check step alone (\"new commits checked\": signatures, membership, roles, each merge against its "
                        + "recomputed policy merge; ratio = merges / \(ordinaryCommits) ordinary)",
                    ("merges", mergeCheck), ("ordinary", ordinaryCheck)),
                row("B13 the check step alone, merge history vs \(Format.count(total)) ordinary commits",
                    ("merges", mergeCheck), ("\(Format.count(total)) ordinary", sameCountCheck)),
                row("B13 the fetch alone (its traced steps, the object copy included; ratio = merges / \(ordinaryCommits) ordinary)",
                    ("merges", mergeFetch), ("ordinary", ordinaryFetch)),
            ] + baselineRows,
            notes: [
                "Set-up, not timed (\(Format.duration(setUp.seconds)) this run): alice@x makes an `aac` profile and adds "
                    + "carol@y (Admin), bob@b (Editor) and \(2 * merges / membershipEvery) throwaway members (Viewer, keys "
                    + "generated in process), publishes it to a bare repository (`concord init --bare`), copied as is into "
                    + "two more bare repositories; carol clones it, and so does B (bob@b), which adds the two copies as "
                    + "remotes `\(remotes.ordinary)` and `\(remotes.sameCount)`. Then, through the library in this process "
                    + "(as B7 writes its commits; 500 `concord` processes would take most of a minute), \(merges) rounds on "
                    + "the first bare repository: alice commits and syncs (a fast-forward push), carol commits and syncs "
                    + "(fetch, policy merge, one signed merge commit, push), alice syncs (fast-forward). So each merge joins "
                    + "exactly one commit from each side. In \(merges / membershipEvery) of the rounds (every "
                    + "\(membershipEvery)th) both commits are membership changes (alice and carol each change the role of "
                    + "a different throwaway member, Viewer ↔ User), so those merges join concurrent membership changes "
                    + "and the receiving device resolves membership by replaying both sides' decisions; in the other "
                    + "rounds each commits one new vocabulary record. The merge history holds \(Format.count(total)) new "
                    + "commits: \(merges) merges and \(total - merges) ordinary ones. The reference histories: "
                    + "\(ordinaryCommits) and \(Format.count(total)) one-record commits by alice, on copies of the start, and "
                    + "(remote `\(remotes.recordMerges)`) the same \(merges) rounds on another copy, by alice and carol on clones "
                    + "of it, with a record written in every round (no membership change).",
                "Checks after the set-up: the merge history has \(merges) merge commits and exactly "
                    + "\(2 * merges / membershipEvery) commits changing `.concord/members` (two per membership round).",
                "Timed, per run: a `cp -a` copy of B's clone (not timed) runs `concord sync --json` against one of the "
                    + "four remotes (fetch, check every new commit, fast-forward, check out), with "
                    + "`CONCORD_TRACE_PERF=1`, from launch to exit; the four syncs take turns going first. One untimed "
                    + "warm-up run, then \(runs) timed runs. The check and fetch rows are the sync's own "
                    + "\"new commits checked\" step and the fetch's traced steps (the object copy's three, then \"fetched into the "
                    + "quarantine\"). Checks after every sync: exit 0, "
                    + "the reported number of received commits, and B's HEAD at the remote's main.",
                "Runs, merges: \(Format.runs(mergeSync)); \(ordinaryCommits) ordinary: \(Format.runs(ordinarySync)); "
                    + "\(Format.count(total)) ordinary: \(Format.runs(sameCountSync)). Check step, merges: \(Format.runs(mergeCheck)); "
                    + "\(ordinaryCommits) ordinary: \(Format.runs(ordinaryCheck)); \(Format.count(total)) ordinary: "
                    + "\(Format.runs(sameCountCheck)). Merges of records only: \(Format.runs(recordMergeSync)); check step "
                    + "\(Format.runs(recordMergeCheck)).",
            ] + (context.baseline.map { other in [
                "Baseline rows (`--baseline`): the same syncs of the merge history, of the \(ordinaryCommits) ordinary "
                    + "commits and of the merges of records only by the earlier binary `\(other.binary)`, each on its own `cp -a` copy of the same B clone "
                    + "(made by this build; the data format is the same, and the earlier build accepts both histories), "
                    + "in turns with this build's syncs. Runs, merges: \(Format.runs(baselineMerge)); ordinary: "
                    + "\(Format.runs(baselineOrdinary)); check step, merges: \(Format.runs(baselineMergeCheck)); ordinary: "
                    + "\(Format.runs(baselineOrdinaryCheck)); merges of records only: \(Format.runs(baselineRecordMerge)).",
            ] } ?? []))
    }

    /// What the set-up leaves: B's pristine clone (with its four remotes) and, per remote, its main
    /// and the number of new commits B's sync must report.
    struct Senders {
        let homeB: URL
        let pristineB: URL
        let mains: [String: String]
        let commitsReceived: [String: Int]
    }

    static func prepare(_ context: BenchContext) throws -> Senders {
        let concord = context.concord
        let homeX = context.path("home-x"), homeY = context.path("home-y"), homeB = context.path("home-b")
        try concord.makeHome(homeX, member: "alice", device: "x")
        try concord.makeHome(homeY, member: "carol", device: "y")
        try concord.makeHome(homeB, member: "bob", device: "b")
        let profileX = context.path("sender-x"), profileY = context.path("sender-y"), pristineB = context.path("device-b")
        let bare = context.path("merges.git"), ordinaryBare = context.path("ordinary.git"), sameCountBare = context.path("same-count.git")
        let recordBare = context.path("record-merges.git")
        context.progress("B13 preparing: profile, members, bare repositories, clones")
        try concord.run(["init", profileX.path, "--name", "B13", "--template", "aac"], home: homeX, what: "concord init (alice@x)")
        try concord.run(["init", "--bare", bare.path], home: homeX, what: "concord init --bare")
        try concord.run(["remote", "add", "origin", bare.path, "-C", profileX.path], home: homeX, what: "concord remote add (alice@x)")

        let identityX = try Identity.load(from: homeX), identityY = try Identity.load(from: homeY)
        let senderX = try Profile.open(at: profileX, environment: ConcordEnvironment(home: homeX))
        try senderX.members.add("carol", role: .admin, device: "y", key: identityY.key.publicKey, as: identityX)
        try senderX.members.add("bob", role: .editor, device: "b", key: try Identity.load(from: homeB).key.publicKey, as: identityX)
        let throwaway = (0..<(2 * merges / membershipEvery)).map { String(format: "t%02d", $0) }
        for name in throwaway {
            try senderX.members.add(name, role: .viewer, device: "d", key: SigningKey.generate().publicKey, as: identityX)
        }
        _ = try senderX.sync.run(remote: "origin", as: identityX)
        // The same starting point for the reference histories.
        for copy in [ordinaryBare, sameCountBare, recordBare] {
            try concord.runner.run("/bin/cp", ["-a", bare.path, copy.path], environment: ProcessInfo.processInfo.environment,
                                   what: "cp -a merges.git \(copy.lastPathComponent)")
        }
        try concord.run(["clone", bare.path, profileY.path], home: homeY, what: "concord clone (carol@y)")
        try concord.run(["clone", bare.path, pristineB.path], home: homeB, what: "concord clone (B)")
        for (name, url) in [(remotes.ordinary, ordinaryBare), (remotes.sameCount, sameCountBare), (remotes.recordMerges, recordBare)] {
            try concord.run(["remote", "add", name, url.path, "-C", pristineB.path], home: homeB, what: "concord remote add \(name) (B)")
            try concord.run(["sync", "--remote", name, "-C", pristineB.path], home: homeB, what: "concord sync --remote \(name) (B)")
        }
        let start = try context.git.resolve("refs/heads/main", in: bare)

        context.progress("B13 preparing: \(merges) merge rounds (alice commits, carol commits and merges)")
        let senderY = try Profile.open(at: profileY, environment: ConcordEnvironment(home: homeY))
        try mergeRounds(context, x: (senderX, identityX), y: (senderY, identityY), membership: throwaway)
        // The same rounds with records only, on another copy of the start.
        context.progress("B13 preparing: \(merges) merge rounds of records only (\(remotes.recordMerges))")
        let recordX = context.path("sender-x-records"), recordY = context.path("sender-y-records")
        try concord.run(["clone", recordBare.path, recordX.path], home: homeX, what: "concord clone (alice, record merges)")
        try concord.run(["clone", recordBare.path, recordY.path], home: homeY, what: "concord clone (carol, record merges)")
        try mergeRounds(context, x: (try Profile.open(at: recordX, environment: ConcordEnvironment(home: homeX)), identityX),
                        y: (try Profile.open(at: recordY, environment: ConcordEnvironment(home: homeY)), identityY), membership: nil)
        let recordMergeCount = try count(context, ["rev-list", "--merges", "--count", "\(start)..main"], in: recordBare)
        let recordTotal = try count(context, ["rev-list", "--count", "\(start)..main"], in: recordBare)
        guard recordMergeCount == merges else {
            throw BenchError("B13: the history of merges of records only has \(recordMergeCount) merges, expected \(merges)")
        }
        let mergeCount = try count(context, ["rev-list", "--merges", "--count", "\(start)..main"], in: bare)
        let mergeTotal = try count(context, ["rev-list", "--count", "\(start)..main"], in: bare)
        let membershipCommits = try count(context, ["rev-list", "--no-merges", "--count", "\(start)..main", "--", ".concord/members"], in: bare)
        guard mergeCount == merges, membershipCommits == 2 * merges / membershipEvery else {
            throw BenchError("B13: the merge history has \(mergeCount) merges and \(membershipCommits) commits changing members, "
                             + "expected \(merges) and \(2 * merges / membershipEvery)")
        }

        // The reference histories: alice's one-record commits on a clone of each copy.
        for (name, url, commits) in [(remotes.ordinary, ordinaryBare, ordinaryCommits), (remotes.sameCount, sameCountBare, mergeTotal)] {
            context.progress("B13 preparing: \(commits) ordinary one-record commits (\(name))")
            let clone = context.path("sender-\(name)")
            try concord.run(["clone", url.path, clone.path], home: homeX, what: "concord clone (alice, \(name))")
            let sender = try Profile.open(at: clone, environment: ConcordEnvironment(home: homeX))
            for index in 0..<commits {
                try sender.records.write(as: identityX) { transaction in
                    try transaction.put(VocabularyData.kind, VocabularyData.id(20_000 + index), data: VocabularyData.data(index, revision: 1))
                }
            }
            _ = try sender.sync.run(remote: "origin", as: identityX)
        }
        let mains = try [remotes.merges: bare, remotes.ordinary: ordinaryBare, remotes.sameCount: sameCountBare, remotes.recordMerges: recordBare]
            .mapValues { try context.git.resolve("refs/heads/main", in: $0) }
        return Senders(homeB: homeB, pristineB: pristineB, mains: mains,
                       commitsReceived: [remotes.merges: mergeTotal, remotes.ordinary: ordinaryCommits, remotes.sameCount: mergeTotal,
                                         remotes.recordMerges: recordTotal])
    }

    /// `merges` rounds on the remote `origin` of both senders: x commits and syncs (a fast-forward push), y commits
    /// and syncs (one merge, pushed), x syncs (fast-forward). With `membership` (the throwaway members), every
    /// `membershipEvery`-th round both commit a role change of a different one of them instead of a record.
    static func mergeRounds(_ context: BenchContext, x: (profile: Profile, identity: Identity), y: (profile: Profile, identity: Identity),
                            membership throwaway: [String]?) throws {
        let (senderX, identityX) = x, (senderY, identityY) = y
        var flips = [String: Role]()
        func commit(on profile: Profile, as identity: Identity, round: Int, side: Int) throws {
            if let throwaway, round % membershipEvery == membershipEvery - 1 {
                let name = throwaway[2 * (round / membershipEvery) + side]
                let role: Role = flips[name] == .user ? .viewer : .user
                flips[name] = role
                try profile.members.setRole(name, to: role, as: identity)
            } else {
                let index = side * 10_000 + round
                try profile.records.write(as: identity) { transaction in
                    try transaction.put(VocabularyData.kind, VocabularyData.id(index), data: VocabularyData.data(index, revision: 1))
                }
            }
        }
        for round in 0..<merges {
            try commit(on: senderX, as: identityX, round: round, side: 0)
            _ = try senderX.sync.run(remote: "origin", as: identityX)
            try commit(on: senderY, as: identityY, round: round, side: 1)
            let merged = try senderY.sync.run(remote: "origin", as: identityY)
            guard merged.received == 1, merged.sent >= 1 else {
                throw BenchError("B13 round \(round): carol's sync received \(merged.received) and sent \(merged.sent) commits, "
                                 + "expected 1 received and a merge sent")
            }
            _ = try senderX.sync.run(remote: "origin", as: identityX)
            if round % 20 == 19 { context.progress("B13 preparing: \(round + 1) merges") }
        }
    }

    /// One `concord sync` of `device` from `remote`, with its fetch and check steps, in seconds.
    static func timeSync(_ context: BenchContext, _ concord: ConcordCLI, device: URL, remote: String,
                         senders: Senders) throws -> (sync: Double, fetched: Double, checked: Double) {
        var environment = concord.environment(home: senders.homeB)
        environment["CONCORD_TRACE_PERF"] = "1"
        let result = try concord.runner.run(concord.path, ["sync", "--remote", remote, "-C", device.path, "--json"],
                                                    environment: environment, what: "concord sync --remote \(remote) (B)")
        let report = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any] ?? [:]
        let received = report["received"] as? Int ?? -1
        guard received == senders.commitsReceived[remote] else {
            throw BenchError("B13: B's sync from \(remote) received \(received) commits, expected \(senders.commitsReceived[remote] ?? 0)")
        }
        let head = try context.git.resolve("HEAD", in: device)
        guard head == senders.mains[remote] else {
            throw BenchError("B13: after B's sync from \(remote) HEAD is \(head), the remote's main is \(senders.mains[remote] ?? "?")")
        }
        guard let checked = VerificationBenchmark.checkMilliseconds(in: result.errorOutput),
              let fetched = VerificationBenchmark.fetchMilliseconds(in: result.errorOutput) else {
            throw BenchError("B13: concord sync with CONCORD_TRACE_PERF=1 printed no 'fetched into the quarantine' or "
                             + "'new commits checked' step:\n\(result.errorOutput.prefix(2000))")
        }
        return (result.seconds, fetched / 1000, checked / 1000)
    }

    static func count(_ context: BenchContext, _ arguments: [String], in repository: URL) throws -> Int {
        let text = try context.git.run(arguments, in: repository, what: "git \(arguments.prefix(3).joined(separator: " "))").output
        guard let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("git \(arguments.joined(separator: " ")) printed \(text.prefix(200)), not a count")
        }
        return value
    }
}
