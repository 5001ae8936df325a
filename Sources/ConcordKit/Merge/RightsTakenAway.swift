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
    static func apply(to index: MergeIndex, in repository: Repository, ours: ObjectID, theirs: ObjectID, base: ObjectID?,
                      kinds: KindsTable) throws -> [LeftOut] {
        let tree = (merged: try index.writeTree(), ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        func membersDirectory(_ tree: ObjectID) throws -> ObjectID? { try repository.entry(at: ProfilePaths.membersDirectory, inTree: tree)?.id }
        let mergedDirectory = try membersDirectory(tree.merged)
        // The common case: the merged members are one side's, unchanged; nobody has less than there.
        let sides = [(side: ours, sideTree: tree.ours, other: theirs), (side: theirs, sideTree: tree.theirs, other: ours)]
        let changedSides = try sides.filter { try membersDirectory($0.sideTree) != mergedDirectory }
        guard !changedSides.isEmpty else { return [] }

        let merged = try CommitAuthorizer.membership(in: repository, tree: tree.merged)
        // path → (side index, member, commit) for each side's changes left out.
        var leftOut = [String: [(side: Int, member: String, commit: ObjectID)]]()
        for entry in changedSides {
            let sideIndex = entry.side == ours ? 0 : 1
            let there = try CommitAuthorizer.membership(in: repository, tree: entry.sideTree)
            // Who has less in the merge than on this side: revoked, or a lower role.
            var lowered = [String: Member]()
            for member in there.members.values where member.status == .active {
                guard let now = merged.members[member.name], now.status == .active else {
                    var lost = merged.members[member.name] ?? member
                    lost.status = .revoked
                    lowered[member.name] = lost
                    continue
                }
                if now.role < member.role { lowered[member.name] = now }
            }
            guard !lowered.isEmpty else { continue }
            // Their commits on this side only (oldest first), each change judged under their merged rights.
            for commit in try repository.newCommits(from: entry.side, excluding: [entry.other]) where commit.parents.count == 1 {
                guard let key = try signer(of: commit, in: repository) else { continue }
                var names = Set(there.holders(of: key).map(\.member.name) + merged.holders(of: key).map(\.member.name))
                if let actor = CommitTrailers(message: commit.message).actor { names.insert(actor) }
                let responsible = names.sorted().compactMap { lowered[$0] }
                guard !responsible.isEmpty else { continue }
                let parentTree = try repository.commit(commit.parents[0]).tree
                for change in try repository.treeChanges(from: parentTree, to: commit.tree) {
                    let path = String(decoding: change.path, as: UTF8.self)
                    guard !isAuthority(path) else { continue }   // member and invitation files: the resolution's
                    for member in responsible where mayNotChange(path, member, kinds: kinds) {
                        leftOut[path, default: []].removeAll { $0.side == sideIndex && $0.member == member.name }
                        leftOut[path, default: []].append((sideIndex, member.name, commit.id))
                    }
                }
            }
        }
        guard !leftOut.isEmpty else { return [] }

        let treesBySide = [tree.ours, tree.theirs]
        let baseTree = try base.map { try repository.commit($0).tree }
        var report = [LeftOut]()
        for (path, changes) in leftOut.sorted(by: { $0.key < $1.key }) {
            let sidesLeftOut = Set(changes.map(\.side))
            if case .success(.logDay) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) {
                // A log keeps everything but the lowered members' own entries from the sides they lost rights on.
                let dropped = Set(changes.map(\.member))
                let kept = try sidesLeftOut.count == 2 ? baseTree.flatMap { try blob(path, in: $0, repository) }
                                                       : blob(path, in: treesBySide[1 - sidesLeftOut.first!], repository)
                let keptEntries = Set(try LogEntry.parseLogFile(kept ?? []).map(\.identity))
                let entries = try LogEntry.parseLogFile(try blob(path, in: tree.merged, repository) ?? [])
                    .filter { !dropped.contains($0.by) || keptEntries.contains($0.identity) }
                // (A day file only they wrote stays, empty: files are never removed.)
                try index.set(try treePath(path), to: try repository.writeBlob(LogEntry.encodeLogFile(entries)))
            } else {
                // Any other file: the other side's version, or the base's when both sides lost it. A
                // record that side lacks stays (files are never removed) as a tombstone of the version
                // left out: deleted by its own writer, at its own stamp.
                let source = sidesLeftOut.count == 2 ? baseTree : treesBySide[1 - sidesLeftOut.first!]
                if let source, let entry = try repository.entry(at: path, inTree: source), entry.kind == .blob {
                    try index.set(try treePath(path), to: entry.id)
                } else if let bytes = try blob(path, in: tree.merged, repository), var record = try? Record.decode(bytes) {
                    record = Record(id: record.id, kind: record.kind, device: record.device, member: record.member, stamp: record.stamp,
                                    state: .deleted)
                    try index.set(try treePath(path), to: try repository.writeBlob(record.encoded()))
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

    /// Whether `member`, with the rights the merge leaves them, may not change `path`.
    private static func mayNotChange(_ path: String, _ member: Member, kinds: KindsTable) -> Bool {
        member.status != .active || AccessRule.mayChange(path, by: member, kinds: kinds) != nil
    }

    private static func isAuthority(_ path: String) -> Bool {
        path.hasPrefix(ProfilePaths.membersDirectory + "/") || path.hasPrefix(ProfilePaths.invitationsDirectory + "/")
    }

    private static func blob(_ path: String, in tree: ObjectID, _ repository: Repository) throws -> [UInt8]? {
        guard let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob else { return nil }
        return try repository.blob(entry.id)
    }

    /// The key that signed `commit` (nil: unsigned, or a signature that does not verify).
    private static func signer(of commit: Commit, in repository: Repository) throws -> SSHPublicKey? {
        guard let signed = try repository.signature(ofCommit: commit.id) else { return nil }
        return try? SSHSignature.verify(signed.signature, message: signed.signedData)
    }
}
