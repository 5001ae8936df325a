import ConcordGit
import ConcordModel
import ConcordTrust

/// What a member did on a merge's side after losing their rights on the main line counts only as
/// far as their new role allows (docs/security.md, "What a member who lost their rights did
/// concurrently").
///
/// Only the side (the second parent's commits) can lose anything: the main line's commits reached
/// the remote before any decision the side brings, which takes effect where it joins, after them.
/// When a merge's membership (`MembershipResolution`) gives a member less than the side does — the
/// main line revoked or demoted them, or took away the Admin who promoted them — the side's commits
/// by the member are concurrent with what took their rights away: none of them is an ancestor of
/// it, or the side would show it. Each file such a commit changed that the member may not change
/// under the merged membership and kinds is left out of the merge: the file keeps the main line's
/// version, and a log keeps every entry but the member's own from the side. What is left out stays
/// in history and is reported (`PolicyMerge.leftOut`, the merge commit's `Concord-Left-Out` trailers).
///
/// So a member revoked on the main line gains nothing by writing on an old copy weeks later, and an
/// Admin who revokes someone on an old copy takes nothing away that had already reached main.
/// Later edits by others of a file left out, made on top of the member's on the side, are left out
/// with it (the file is taken whole from the main line) and reported the same way.
struct RightsTakenAway {
    /// A file a merge took from the other side because a member who lost their rights changed it.
    struct LeftOut: Sendable, Equatable {
        let path: String
        /// The member whose change it was.
        let member: String
        /// Their newest commit that changed it.
        let commit: ObjectID
        /// What took the right away.
        let cause: LeftOutCause

        /// How the merge commit's `Concord-Left-Out` trailer says it.
        var trailerValue: String { "\(path) by=\(member) commit=\(commit.short)" }
    }

    /// Applies the rule to `index`, the merge of `ours` (the main line) and `theirs` (the side) so far
    /// (membership resolved), under the merged `kinds`; returns what it left out.
    ///
    /// Two passes. First, members with fewer rights in the merged membership than on the side: their
    /// changes there beyond their merged role. Then, where the kinds the merge ends with (after the
    /// first pass left out a fallen Admin's kinds change) differ from the side's: every member's
    /// changes on the side that those kinds do not allow them (a write only the fallen change allowed).
    static func apply(to index: MergeIndex, in repository: Repository, ours: ObjectID, theirs: ObjectID,
                      kinds: KindsTable) throws -> [LeftOut] {
        let trees = (ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        func entryID(_ path: String, _ tree: ObjectID) throws -> ObjectID? { try repository.entry(at: path, inTree: tree)?.id }
        let side = Side(tip: theirs, tree: trees.theirs, mainLine: ours)
        var report = [LeftOut]()

        // Pass 1. The common case: the merged members are those every side commit was made under, unchanged; nobody has less.
        var merged = try index.writeTree()
        let madeUnder = try membershipTrees(of: side, repository)
        let mergedMembers = try entryID(ProfilePaths.membersDirectory, merged)
        if try madeUnder.contains(where: { try entryID(ProfilePaths.membersDirectory, $0) != mergedMembers }) {
            // Who has less in the merge than where a side commit was made, or on the side's tip: revoked, or a lower role.
            let found = try find(on: side, merged: merged, kinds: kinds, repository, madeUnder: madeUnder,
                                 candidates: RightsTakenAwayRule.lowered, cause: .rightsLowered)
            report += try leaveOut(found, from: index, merged: merged, mainLine: trees.ours, kinds: kinds, repository)
            merged = try index.writeTree()
        }

        // Pass 2. Kinds the merge ends with that the side did not have: everyone's changes there, judged under them.
        guard try entryID(KindsTable.path, side.tree) != entryID(KindsTable.path, merged),
              let kindsBytes = try blob(KindsTable.path, in: merged, repository),
              let table = try? KindsTable.decode(kindsBytes) else { return report }
        let found = try find(on: side, merged: merged, kinds: table, repository, madeUnder: [side.tree],
                             candidates: RightsTakenAwayRule.capped, cause: .kindsChanged)
        // A file the first pass left out already is reported once.
        report += try leaveOut(found, from: index, merged: merged, mainLine: trees.ours, kinds: table, repository)
            .filter { late in !report.contains { $0.path == late.path && $0.member == late.member } }
        return report
    }

    /// The merge's side: its tip and tree, and the main line's tip.
    private struct Side {
        let tip: ObjectID
        let tree: ObjectID
        let mainLine: ObjectID
    }

    /// The trees whose memberships the side's commits were made under (each one's parents'), and the
    /// side's tip: a member's rights on the side are the most they held in any of them, so that a
    /// decision of their own on the side (demoting themselves, leaving) does not hide what they wrote
    /// before it (the fourth red-team pass, issue 42).
    private static func membershipTrees(of side: Side, _ repository: Repository) throws -> [ObjectID] {
        var trees = [side.tree], seen = Set([side.tree])
        for commit in try repository.newCommits(from: side.tip, excluding: [side.mainLine]) {
            for parent in commit.parents {
                let tree = try repository.commit(parent).tree
                if seen.insert(tree).inserted { trees.append(tree) }
            }
        }
        return trees
    }

    /// The changes to leave out on `side`: the members `candidates` names (from each membership in
    /// `madeUnder` and the merged tree's, `RightsTakenAwayRule`) with the rights the merge leaves them,
    /// and what their commits there changed that `kinds` does not allow them; and what a key the main
    /// line removed signed there.
    private static func find(on side: Side, merged: ObjectID, kinds: KindsTable, _ repository: Repository, madeUnder: [ObjectID],
                             candidates: (_ there: Membership, _ merged: Membership) -> [String: Member], cause: LeftOutCause) throws -> Found {
        let membership = try CommitAuthorizer.membership(in: repository, tree: merged)
        let there = try CommitAuthorizer.membership(in: repository, tree: side.tree)
        var named = [String: Member]()
        for tree in madeUnder {
            for (name, rights) in candidates(try CommitAuthorizer.membership(in: repository, tree: tree), membership) where named[name] == nil {
                named[name] = rights
            }
        }
        let removedKeys = RightsTakenAwayRule.keysRemoved(there: there, merged: membership)
        var found = Found()
        guard !named.isEmpty || !removedKeys.isEmpty else { return found }
        for commit in try repository.newCommits(from: side.tip, excluding: [side.mainLine]) where commit.parents.count <= 2 && !commit.parents.isEmpty {
            guard let key = try signer(of: commit, in: repository) else { continue }
            // Who signed it where it was made, as well as on the side's tip and in the merge.
            let madeBy = try CommitAuthorizer.membership(in: repository, tree: try repository.commit(commit.parents[0]).tree)
            var responsible = RightsTakenAwayRule.responsible(signer: key, actor: CommitTrailers(message: commit.message).actor,
                                                              there: there, merged: membership, candidates: named)
            for member in RightsTakenAwayRule.responsible(signer: key, actor: nil, there: madeBy, merged: membership, candidates: named)
            where !responsible.contains(where: { $0.name == member.name }) {
                responsible.append(member)
            }
            // A key the merge no longer gives its member: what it signed here answers as a revoked member's.
            var because = cause
            if let owner = removedKeys[key] {
                responsible.removeAll { $0.name == owner.name }
                responsible.append(owner)
                because = .keyRemoved(fingerprint: key.fingerprint)
            }
            guard !responsible.isEmpty else { continue }
            let before = commit.parents.count == 1 ? try repository.commit(commit.parents[0]).tree
                : try PolicyMerge.tree(in: repository, ours: commit.parents[0], theirs: commit.parents[1])
            let paths = try repository.treeChanges(from: before, to: commit.tree).map { String(decoding: $0.path, as: UTF8.self) }
            for (path, member) in RightsTakenAwayRule.leftOut(paths, by: responsible, kinds: kinds) {
                // Their newest commit that changed it (commits come oldest first).
                found[path, default: []].removeAll { $0.member == member }
                found[path, default: []].append((member, commit.id, because))
            }
        }
        return found
    }

    /// path → (member, commit) of the changes to leave out.
    private typealias Found = [String: [(member: String, commit: ObjectID, cause: LeftOutCause)]]

    /// Leaves `found` out of `index` (whose tree is `merged`): each file takes the main line's version
    /// (`mainLine`, its tree), a log drops the members' own entries from the side. Returns what was left out.
    private static func leaveOut(_ found: Found, from index: MergeIndex, merged: ObjectID, mainLine: ObjectID,
                                 kinds: KindsTable, _ repository: Repository) throws -> [LeftOut] {
        guard !found.isEmpty else { return [] }
        var report = [LeftOut]()
        for (path, changes) in found.sorted(by: { $0.key < $1.key }) {
            if case .success(.logDay) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) {
                // A log keeps everything but the members' own entries from the side.
                let kept = try LogEntry.parseLogFile(try blob(path, in: mainLine, repository) ?? [])
                let entries = RightsTakenAwayRule.logEntries(try LogEntry.parseLogFile(try blob(path, in: merged, repository) ?? []),
                                                             keeping: kept, droppingThoseBy: Set(changes.map(\.member)))
                // (A day file only they wrote stays, empty: files are never removed.)
                try index.set(try treePath(path), to: try repository.writeBlob(LogEntry.encodeLogFile(entries)))
            } else {
                // Any other file: the main line's version. A record the main line lacks stays (files are
                // never removed) as a tombstone of the version left out: deleted by its own writer, at
                // its own stamp.
                if let entry = try repository.entry(at: path, inTree: mainLine), entry.kind == .blob {
                    try index.set(try treePath(path), to: entry.id)
                } else if let bytes = try blob(path, in: merged, repository), let record = try? Record.decode(bytes) {
                    try index.set(try treePath(path), to: try repository.writeBlob(RightsTakenAwayRule.tombstone(of: record).encoded()))
                } else {
                    try index.remove(try treePath(path))
                }
            }
            for change in changes.sorted(by: { $0.member < $1.member }) {
                report.append(LeftOut(path: path, member: change.member, commit: change.commit, cause: change.cause))
            }
        }
        return report
    }

    private static func blob(_ path: String, in tree: ObjectID, _ repository: Repository) throws -> [UInt8]? {
        guard let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob else { return nil }
        return try repository.blob(entry.id)
    }

    private static func signer(of commit: Commit, in repository: Repository) throws -> SSHPublicKey? {
        try MembershipResolution.signer(of: commit, in: repository)
    }
}
