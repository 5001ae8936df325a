import ConcordGit
import ConcordModel
import ConcordRules

/// Rule 6 for records (data format 7, `StampRule`): what it reads from a repository, as values.
extension CommitAuthorizer {
    /// Refuses a commit (`commit`, signed as `signer`, judged as `judged`) whose record files in
    /// `changes` (its own changes against its first parent, or a merge's differences from the policy
    /// merge) make a claim in another member's name that the file did not make before: at the first
    /// parent's version for a commit of one parent, at the policy merge's or either parent's for a
    /// merge (`parentTrees`). Only from format 7 on (the first parent's `profile.json`).
    func checkRecordStamps(_ commit: Commit, changes: [TreeChange], parentTrees: [ObjectID], kinds: KindsTable,
                           signer: CommitSigner, judged: Member) throws {
        let records = changes.compactMap { change -> (TreeChange, String)? in
            guard change.new != nil, case .success(.record(let kind, let id)) = ProfilePathRules.classify(change.path, kinds: kinds) else { return nil }
            return (change, "\(kind.name)/\(id)")
        }
        guard !records.isEmpty, let first = parentTrees.first, StampRule.applies(parentFormat: try format(at: first)) else { return }
        for (change, label) in records {
            var before = [try bytes(of: change.old)]
            if parentTrees.count > 1 {
                let path = String(decoding: change.path, as: UTF8.self)
                for tree in parentTrees {
                    let entry = try repository.entry(at: path, inTree: tree)
                    before.append(try entry.flatMap { $0.kind == .blob ? try bytes(of: .file($0.id)) : nil })
                }
            }
            if let violation = StampRule.recordProblem(label, after: try bytes(of: change.new), before: before, signer: judged.name) {
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
