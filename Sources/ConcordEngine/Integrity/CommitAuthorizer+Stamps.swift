import ConcordGit
import ConcordModel
import ConcordRules

/// Rule 6 for records (data format 7, `StampRule`): what it reads from a repository, as values.
extension CommitAuthorizer {
    /// Refuses a commit (`commit`, signed as `signer`, judged as `judged`) whose record files in
    /// `changes` (its own changes against its first parent, or a merge's differences from the policy
    /// merge) make a claim in another member's name that the file did not make before: at the first
    /// parent's version for a commit of one parent, at the policy merge's for a merge. A merge that
    /// differs from its policy merge writes in its signer's name only, so it cannot take an older
    /// version of another member's record from an ancestor (red-team finding, issue 42), nor does it
    /// remove a record file the policy merge keeps. Only from format 7 on (the first parent's `profile.json`).
    func checkRecordStamps(_ commit: Commit, changes: [TreeChange], isMerge: Bool, firstParentTree: ObjectID, kinds: KindsTable,
                           signer: CommitSigner, judged: Member) throws {
        guard StampRule.applies(parentFormat: try format(at: firstParentTree)) else { return }
        if let violation = try stampViolation(changes, isMerge: isMerge, kinds: kinds, judged: judged) {
            throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer.label, change: violation.change, reason: violation.reason)
        }
    }

    /// Rule 6 where a side joins the main line: a merge (`merge`, signed as `signer`) whose first
    /// parent (tree `mainLineTree`) is of format 7 or later holds every commit it brings in that was
    /// made on an older format — a fork from before the upgrade, which its own check did not hold to
    /// the rule — to the rule as if made at the join (the second red-team pass's HIGH 2). Honest
    /// commits pass: concord stamps what it writes with its writer's name. One that makes a claim in
    /// another member's name refuses the merge.
    func checkSideStamps(_ merge: Commit, mainLineTree: ObjectID, signer: CommitSigner) throws {
        let joinFormat = try format(at: mainLineTree)
        guard merge.parents.count == 2, StampRule.applies(parentFormat: joinFormat) else { return }
        for commit in try repository.newCommits(from: merge.parents[1], excluding: [merge.parents[0]]) {
            guard let firstParent = commit.parents.first else { continue }
            let parentTree = try commitTrees[firstParent] ?? repository.commit(firstParent).tree
            let madeAt = try format(at: parentTree)
            guard !StampRule.applies(parentFormat: madeAt) else { continue }
            let isMerge = commit.parents.count == 2
            let before = isMerge ? try PolicyMerge.tree(in: repository, ours: commit.parents[0], theirs: commit.parents[1], caches: caches) : parentTree
            // Its signer as its own check named them: in its parent's membership (a merge's: the merged one of its
            // parents), else its own tree's (an admission); a commit no member signed is refused, never skipped.
            let key = try MembershipResolution.signer(of: commit, in: repository, caches: caches)
            let holder = try key.flatMap { key in
                try membership(at: before).holders(of: key).first?.member ?? membership(at: commit.tree).holders(of: key).first?.member
            }
            guard let holder else {
                throw ConcordError.unauthorizedCommit(commit: merge.id.short, signer: signer.label, change: nil,
                                                      reason: "it brings in commit \(commit.id.short), made on a format \(madeAt) copy, which no member's key signed")
            }
            let changes = try repository.treeChanges(from: before, to: commit.tree)
            let trailers = CommitTrailers(message: commit.message)
            let judged = if let actor = trailers.actor, actor != holder.name, let acting = try membership(at: before).members[actor] {
                acting
            } else {
                holder
            }
            if let violation = try stampViolation(changes, isMerge: isMerge, kinds: try kindsTable(at: parentTree), judged: judged) {
                throw ConcordError.unauthorizedCommit(commit: merge.id.short, signer: signer.label, change: violation.change,
                                                      reason: "it brings in commit \(commit.id.short), made on a format \(madeAt) copy, where \(violation.reason); "
                                                          + "a commit is judged by the format where it joins the main line (\(joinFormat) here)")
            }
        }
    }

    /// The first of `changes` whose record claims something in another member's name than `judged`'s.
    private func stampViolation(_ changes: [TreeChange], isMerge: Bool, kinds: KindsTable, judged: Member) throws -> Violation? {
        for change in changes {
            guard case .success(.record(let kind, let id)) = ProfilePathRules.classify(change.path, kinds: kinds) else { continue }
            let label = "\(kind.name)/\(id)"
            let violation = if change.new == nil {
                isMerge ? StampRule.mergeRemoval(label) : nil
            } else {
                StampRule.recordProblem(label, after: try bytes(of: change.new), before: [try bytes(of: change.old)], signer: judged.name)
            }
            if let violation { return violation }
        }
        return nil
    }

    /// The data format of tree `tree`'s `profile.json` (0 when it has none that reads), kept by the file's blob id.
    private func format(at tree: ObjectID) throws -> Int {
        guard let entry = try repository.entry(at: ProfilePaths.profile, inTree: tree), entry.kind == .blob else { return 0 }
        if let known = formatsByBlob[entry.id] { return known }
        let format = try bytes(of: .file(entry.id)).flatMap { try? ProfileInfo.decode($0) }?.formatVersion ?? 0
        formatsByBlob[entry.id] = format
        return format
    }
}
