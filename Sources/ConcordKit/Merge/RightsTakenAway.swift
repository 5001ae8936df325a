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
        let sides = [(side: ours, sideTree: trees.ours, other: theirs), (side: theirs, sideTree: trees.theirs, other: ours)]
        var report = [LeftOut]()

        // Pass 1. The common case: the merged members are one side's, unchanged; nobody has less than there.
        var merged = try index.writeTree()
        let mergedDirectory = try entryID(ProfilePaths.membersDirectory, merged)
        let changedSides = try sides.filter { try entryID(ProfilePaths.membersDirectory, $0.sideTree) != mergedDirectory }
        if !changedSides.isEmpty {
            let membership = try CommitAuthorizer.membership(in: repository, tree: merged)
            var found = Found()
            for entry in changedSides {
                let there = try CommitAuthorizer.membership(in: repository, tree: entry.sideTree)
                // Who has less in the merge than on this side: revoked, or a lower role.
                var lowered = [String: Member]()
                for member in there.members.values where member.status == .active {
                    guard let now = membership.members[member.name], now.status == .active else {
                        var lost = membership.members[member.name] ?? member
                        lost.status = .revoked
                        lowered[member.name] = lost
                        continue
                    }
                    if now.role < member.role { lowered[member.name] = now }
                }
                guard !lowered.isEmpty else { continue }
                try find(&found, side: entry.side == ours ? 0 : 1, entry.side, other: entry.other, candidates: lowered,
                         there: there, merged: membership, kinds: kinds, repository)
            }
            report += try leaveOut(found, from: index, merged: merged, trees: [trees.ours, trees.theirs], base: base, kinds: kinds, repository)
            merged = try index.writeTree()
        }

        // Pass 2. Kinds the merge ends with that a side did not have: everyone's changes there, judged under them.
        let finalKinds = try entryID(KindsTable.path, merged)
        let restricted = try sides.filter { try entryID(KindsTable.path, $0.sideTree) != finalKinds }
        guard !restricted.isEmpty, let kindsBytes = try blob(KindsTable.path, in: merged, repository),
              let table = try? KindsTable.decode(kindsBytes) else { return report }
        let membership = try CommitAuthorizer.membership(in: repository, tree: merged)
        var found = Found()
        for entry in restricted {
            let there = try CommitAuthorizer.membership(in: repository, tree: entry.sideTree)
            var everyone = [String: Member]()
            for member in there.members.values where member.status == .active {
                var now = membership.members[member.name] ?? member
                if now.status != .active { now.status = .revoked }
                now.role = min(now.role, member.role)
                everyone[member.name] = now
            }
            try find(&found, side: entry.side == ours ? 0 : 1, entry.side, other: entry.other, candidates: everyone,
                     there: there, merged: membership, kinds: table, repository)
        }
        report += try leaveOut(found, from: index, merged: merged, trees: [trees.ours, trees.theirs], base: base, kinds: table, repository)
        return report
    }

    /// path → (side index, member, commit) of the changes to leave out.
    private typealias Found = [String: [(side: Int, member: String, commit: ObjectID)]]

    /// Adds to `found` the changes that commits on `side` only (not reachable from `other`) by one of
    /// `candidates` (their rights in the merge) made and `kinds` does not allow them. A merge commit's
    /// own changes are what it differs from the policy merge of its parents.
    private static func find(_ found: inout Found, side index: Int, _ side: ObjectID, other: ObjectID, candidates: [String: Member],
                             there: Membership, merged: Membership, kinds: KindsTable, _ repository: Repository) throws {
        for commit in try repository.newCommits(from: side, excluding: [other]) where commit.parents.count <= 2 && !commit.parents.isEmpty {
            guard let key = try signer(of: commit, in: repository) else { continue }
            var names = Set(there.holders(of: key).map(\.member.name) + merged.holders(of: key).map(\.member.name))
            if let actor = CommitTrailers(message: commit.message).actor { names.insert(actor) }
            let responsible = names.sorted().compactMap { candidates[$0] }
            guard !responsible.isEmpty else { continue }
            let before = commit.parents.count == 1 ? try repository.commit(commit.parents[0]).tree
                : try PolicyMerge.tree(in: repository, ours: commit.parents[0], theirs: commit.parents[1])
            for change in try repository.treeChanges(from: before, to: commit.tree) {
                let path = String(decoding: change.path, as: UTF8.self)
                guard !isAuthority(path) else { continue }   // member and invitation files: the resolution's
                for member in responsible where mayNotChange(path, member, kinds: kinds) {
                    found[path, default: []].removeAll { $0.side == index && $0.member == member.name }
                    found[path, default: []].append((index, member.name, commit.id))
                }
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
            let sidesLeftOut = Set(changes.map(\.side))
            if case .success(.logDay) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) {
                // A log keeps everything but the members' own entries from the sides they lost rights on.
                let dropped = Set(changes.map(\.member))
                let kept = try sidesLeftOut.count == 2 ? baseTree.flatMap { try blob(path, in: $0, repository) }
                                                       : blob(path, in: treesBySide[1 - sidesLeftOut.first!], repository)
                let keptEntries = Set(try LogEntry.parseLogFile(kept ?? []).map(\.identity))
                let entries = try LogEntry.parseLogFile(try blob(path, in: merged, repository) ?? [])
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
                } else if let bytes = try blob(path, in: merged, repository), var record = try? Record.decode(bytes) {
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

    private static func signer(of commit: Commit, in repository: Repository) throws -> SSHPublicKey? {
        try MembershipResolution.signer(of: commit, in: repository)
    }
}
