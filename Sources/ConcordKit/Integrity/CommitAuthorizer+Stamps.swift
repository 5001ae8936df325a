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
        let records = changes.compactMap { change -> (TreeChange, String)? in
            guard case .success(.record(let kind, let id)) = ProfilePathRules.classify(change.path, kinds: kinds) else { return nil }
            return (change, "\(kind.name)/\(id)")
        }
        guard !records.isEmpty, StampRule.applies(parentFormat: try format(at: firstParentTree)) else { return }
        for (change, label) in records {
            let violation = if change.new == nil {
                isMerge ? StampRule.mergeRemoval(label) : nil
            } else {
                StampRule.recordProblem(label, after: try bytes(of: change.new), before: [try bytes(of: change.old)], signer: judged.name)
            }
            if let violation {
                throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer.label, change: violation.change, reason: violation.reason)
            }
        }
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
