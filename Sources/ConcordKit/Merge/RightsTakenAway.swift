import ConcordGit
import ConcordModel
import ConcordTrust

/// What a member did concurrently with losing their rights counts only as far as their new role
/// allows (docs/security.md, "Concurrent changes to membership").
///
/// When a merge's membership (`MembershipResolution`) gives a member less than one side does — the
/// other side revoked or demoted them, or took away the Admin who promoted them — that side's
/// commits by the member are concurrent with what took their rights away: none of them is an
/// ancestor of it, or the side would show it. Each file such a commit changed that the member may
/// not change under the merged membership and kinds is left out of the merge: the file keeps the
/// other side's version (the merge base's when members on both sides lost rights over it), and a
/// log keeps every entry but the member's own from that side. What is left out stays in history
/// and is reported (`PolicyMerge.leftOut`, the merge commit's `Concord-Left-Out` trailers).
///
/// So an Admin who revoked someone while offline still syncs (the revoked member's concurrent
/// edits simply lose), and a demoted member writing on an old parent weeks later gains nothing.
/// Later edits by others of a file left out, made on top of the member's on the same side, are
/// left out with it (the file is taken whole from the other side) and reported the same way.
struct RightsTakenAway {
    /// A file a merge took from the other side because a member who lost their rights changed it.
    struct LeftOut: Sendable, Equatable {
        let path: String
        /// The member whose change it was.
        let member: String
        /// Their newest commit that changed it.
        let commit: ObjectID

        /// How the merge commit's `Concord-Left-Out` trailer says it.
        var trailerValue: String { "\(path) by=\(member) commit=\(commit.short)" }
    }

    /// Applies the rule to `index`, the merge of `ours` and `theirs` so far (membership resolved),
    /// under the merged `kinds`; returns what it left out.
    ///
    /// Two passes. First, members with fewer rights in the merged membership than on a side: their
    /// changes there beyond their merged role. Then, where the kinds the merge ends with (after the
    /// first pass left out a fallen Admin's kinds change) differ from a side's: every member's changes
    /// on that side that those kinds do not allow them (a write only the fallen change allowed).
    static func apply(to index: MergeIndex, in repository: Repository, ours: ObjectID, theirs: ObjectID, base: ObjectID?,
                      kinds: KindsTable) throws -> [LeftOut] {
        let trees = (ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        func entryID(_ path: String, _ tree: ObjectID) throws -> ObjectID? { try repository.entry(at: path, inTree: tree)?.id }
        let sides = [Side(index: 0, tip: ours, tree: trees.ours, other: theirs), Side(index: 1, tip: theirs, tree: trees.theirs, other: ours)]
        var report = [LeftOut]()

        // Pass 1. The common case: the merged members are one side's, unchanged; nobody has less than there.
        var merged = try index.writeTree()
        let mergedDirectory = try entryID(ProfilePaths.membersDirectory, merged)
        let changedSides = try sides.filter { try entryID(ProfilePaths.membersDirectory, $0.tree) != mergedDirectory }
        if !changedSides.isEmpty {
            // Who has less in the merge than on a side: revoked, or a lower role.
            let found = try find(on: changedSides, merged: merged, kinds: kinds, repository, candidates: RightsTakenAwayRule.lowered)
            report += try leaveOut(found, from: index, merged: merged, trees: [trees.ours, trees.theirs], base: base, kinds: kinds, repository)
            merged = try index.writeTree()
        }

        // Pass 2. Kinds the merge ends with that a side did not have: everyone's changes there, judged under them.
        let finalKinds = try entryID(KindsTable.path, merged)
        let restricted = try sides.filter { try entryID(KindsTable.path, $0.tree) != finalKinds }
        guard !restricted.isEmpty, let kindsBytes = try blob(KindsTable.path, in: merged, repository),
              let table = try? KindsTable.decode(kindsBytes) else { return report }
        let found = try find(on: restricted, merged: merged, kinds: table, repository, candidates: RightsTakenAwayRule.capped)
        report += try leaveOut(found, from: index, merged: merged, trees: [trees.ours, trees.theirs], base: base, kinds: table, repository)
        return report
    }

    /// One side of the merge: its index (0: ours, 1: theirs), tip and tree, and the other side's tip.
    private struct Side {
        let index: Int
        let tip: ObjectID
        let tree: ObjectID
        let other: ObjectID
    }

    /// The changes to leave out on `sides`: on each, the members `candidates` names (from the
    /// side's membership and the merged tree's, `RightsTakenAwayRule`) with the rights the merge
    /// leaves them, and what their commits there changed that `kinds` does not allow them.
    private static func find(on sides: [Side], merged: ObjectID, kinds: KindsTable, _ repository: Repository,
                             candidates: (_ there: Membership, _ merged: Membership) -> [String: Member]) throws -> Found {
        let membership = try CommitAuthorizer.membership(in: repository, tree: merged)
        var found = Found()
        for side in sides {
            let there = try CommitAuthorizer.membership(in: repository, tree: side.tree)
            let named = candidates(there, membership)
            // Keys the main line (ours) removed: what they signed on the side falls. (Not the other way: what
            // a key signed on the main line reached the remote before its removal did.)
            let removedKeys = side.index == 1 ? RightsTakenAwayRule.keysRemoved(there: there, merged: membership) : [:]
            guard !named.isEmpty || !removedKeys.isEmpty else { continue }
            try find(&found, side: side, candidates: named, removedKeys: removedKeys, there: there, merged: membership, kinds: kinds, repository)
        }
        return found
    }

    /// path → (side index, member, commit) of the changes to leave out.
    private typealias Found = [String: [(side: Int, member: String, commit: ObjectID)]]

    /// Adds to `found` the changes that commits on `side` only (not reachable from the other side) by
    /// one of `candidates` (their rights in the merge) made and `kinds` does not allow them. A merge
    /// commit's own changes are what it differs from the policy merge of its parents.
    private static func find(_ found: inout Found, side: Side, candidates: [String: Member], removedKeys: [SSHPublicKey: Member],
                             there: Membership, merged: Membership, kinds: KindsTable, _ repository: Repository) throws {
        for commit in try repository.newCommits(from: side.tip, excluding: [side.other]) where commit.parents.count <= 2 && !commit.parents.isEmpty {
            guard let key = try signer(of: commit, in: repository) else { continue }
            var responsible = RightsTakenAwayRule.responsible(signer: key, actor: CommitTrailers(message: commit.message).actor,
                                                              there: there, merged: merged, candidates: candidates)
            // A key the merge no longer gives its member: what it signed here answers as a revoked member's.
            if let owner = removedKeys[key] {
                responsible.removeAll { $0.name == owner.name }
                responsible.append(owner)
            }
            guard !responsible.isEmpty else { continue }
            let before = commit.parents.count == 1 ? try repository.commit(commit.parents[0]).tree
                : try PolicyMerge.tree(in: repository, ours: commit.parents[0], theirs: commit.parents[1])
            let paths = try repository.treeChanges(from: before, to: commit.tree).map { String(decoding: $0.path, as: UTF8.self) }
            for (path, member) in RightsTakenAwayRule.leftOut(paths, by: responsible, kinds: kinds) {
                // Their newest commit that changed it (commits come oldest first).
                found[path, default: []].removeAll { $0.side == side.index && $0.member == member }
                found[path, default: []].append((side.index, member, commit.id))
            }
        }
    }

    /// Leaves `found` out of `index` (whose tree is `merged`): each file takes the other side's
    /// version (the base's when both sides lost it), a log drops the members' own entries from the
    /// side they lost it on. Returns what was left out.
    private static func leaveOut(_ found: Found, from index: MergeIndex, merged: ObjectID, trees treesBySide: [ObjectID], base: ObjectID?,
                                 kinds: KindsTable, _ repository: Repository) throws -> [LeftOut] {
        guard !found.isEmpty else { return [] }
        let baseTree = try base.map { try repository.commit($0).tree }
        var report = [LeftOut]()
        for (path, changes) in found.sorted(by: { $0.key < $1.key }) {
            let source: ObjectID?
            switch RightsTakenAwayRule.source(leftOutOn: Set(changes.map(\.side))) {
            case .base: source = baseTree
            case .side(let side): source = treesBySide[side]
            }
            if case .success(.logDay) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) {
                // A log keeps everything but the members' own entries from the sides they lost rights on.
                let kept = try LogEntry.parseLogFile(try source.flatMap { try blob(path, in: $0, repository) } ?? [])
                let entries = RightsTakenAwayRule.logEntries(try LogEntry.parseLogFile(try blob(path, in: merged, repository) ?? []),
                                                             keeping: kept, droppingThoseBy: Set(changes.map(\.member)))
                // (A day file only they wrote stays, empty: files are never removed.)
                try index.set(try treePath(path), to: try repository.writeBlob(LogEntry.encodeLogFile(entries)))
            } else {
                // Any other file: the other side's version, or the base's when both sides lost it. A
                // record that side lacks stays (files are never removed) as a tombstone of the version
                // left out: deleted by its own writer, at its own stamp.
                if let source, let entry = try repository.entry(at: path, inTree: source), entry.kind == .blob {
                    try index.set(try treePath(path), to: entry.id)
                } else if let bytes = try blob(path, in: merged, repository), let record = try? Record.decode(bytes) {
                    try index.set(try treePath(path), to: try repository.writeBlob(RightsTakenAwayRule.tombstone(of: record).encoded()))
                } else {
                    try index.remove(try treePath(path))
                }
            }
            for change in changes.sorted(by: { ($0.member, $0.side) < ($1.member, $1.side) }) {
                report.append(LeftOut(path: path, member: change.member, commit: change.commit))
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
