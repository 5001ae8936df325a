import ConcordGit
import ConcordModel
import Foundation

/// A write that a merge did not keep, as `concord conflicts`, `history` and `sync` report it: the
/// record and field, the losing write with its own author, device, time and commit, the write kept
/// in its place, and the merge. Found by comparing the merge's parents, their merge base and the
/// merge's own tree (which every device checked to be the policy merge of its parents), never from
/// what a merge's signer wrote in its trailers (docs/merging.md, "What was lost").
public struct LostEdit: Sendable, Equatable {
    /// `kind/id`.
    public let record: String
    /// The field, or nil when the write that lost was a delete.
    public let field: String?
    /// The write that lost: who, on which device, when, and in which commit's side.
    public let loser: MergeSide
    /// The commit that made the losing write (nil if it could not be found on its side).
    public let loserCommit: String?
    /// The write kept in its place.
    public let winner: MergeSide
    /// The merge that did not keep it, and that merge's date (its signer's clock, seconds).
    public let merge: String
    /// The merge's date: its signer's clock, in seconds since 1970.
    public let mergeTime: Int64

    /// Every write merge `commit` (two parents) did not keep, by record path and field.
    ///
    /// Who made a write is never taken from the names a record's stamps give (its writer chose
    /// them) nor from a commit's `Concord-Clock` (likewise): it is the checked `Concord-Actor` of
    /// the commit that introduced it — the first commit on its side whose version of the record
    /// holds that write (stamp and value) where its parent's did not. A write no commit on its side
    /// introduced is reported as unverified. A write the merge's policy would have kept but the
    /// merge's tree does not (a merge may carry its signer's own changes) lost to the merge's signer.
    package static func inMerge(_ commit: Commit, repository: Repository, caches: EngineCaches) throws -> [LostEdit] {
        guard let contested = try Contested(commit, repository) else { return [] }
        let (base, baseTree, sides) = (contested.base, contested.baseTree, contested.sides)
        var out = [LostEdit]()
        var sideCommits = [Int: [Commit]]()
        func commits(_ side: Int) throws -> [Commit] {
            if let known = sideCommits[side] { return known }
            let found = try repository.newCommits(from: commit.parents[side], excluding: [base])
            sideCommits[side] = found
            return found
        }
        for (path, kind, id) in contested.records {
            guard let ours = try record(path, sides[0], repository), let theirs = try record(path, sides[1], repository),
                  let merged = try record(path, commit.tree, repository) else { continue }
            // A placeholder (a record a merge left out, kept as a file) gives way and loses nothing.
            guard !ours.isPlaceholder, !theirs.isPlaceholder else { continue }
            let lost = RecordMerge.lostWrites(base: try record(path, baseTree, repository), ours: ours, theirs: theirs, merged: merged)
            guard !lost.isEmpty else { continue }
            // What the policy alone makes of the two sides.
            let policy = try policyMerge(kind.policy, path: path, base: baseTree, sides: sides, repository)
            for write in lost {
                let side = holds(ours, field: write.field, write.loser, value: write.value) ? 0 : 1
                let made = try introducer(of: write.field, write.loser, value: write.value, path: path, among: commits(side), repository)
                // Seen and overwritten by the other side (a history merged more than once): not lost.
                if let made, try repository.isAncestor(made.id, of: commit.parents[1 - side]) { continue }
                let loser = try attributed(write.loser, to: made, repository, caches)
                let winner: MergeSide
                if let policy, holds(policy, field: write.field, write.loser, value: write.value) {
                    winner = try mergeAuthor(commit, repository, caches)
                } else {
                    // The kept write: a field's value, or the delete that took the field with it.
                    let field = write.winner.change == .delete ? nil : write.field
                    let value = field.flatMap { merged.data?[$0] }
                    var introduced: Commit?
                    for other in [1 - side, side] where introduced == nil {
                        introduced = try introducer(of: field, write.winner, value: value, path: path, among: commits(other), repository)
                    }
                    winner = try attributed(write.winner, to: introduced, repository, caches)
                }
                out.append(LostEdit(record: "\(kind.name)/\(id)", field: write.field, loser: loser, loserCommit: made?.id.hex,
                                    winner: winner, merge: commit.id.hex, mergeTime: commit.author.time))
            }
        }
        return out
    }

    /// Whether `record` holds the write `side` made to `field` with `value` (nil field: `side`'s delete).
    private static func holds(_ record: Record, field: String?, _ side: MergeSide, value: JSONValue?) -> Bool {
        let stamp = WriteStamp(at: side.stamp, member: side.member, device: side.device)
        guard let field else { return record.isDeleted && record.envelope == stamp }
        guard !record.isDeleted, record.stamp(ofField: field) == stamp else { return false }
        return record.data?[field]?.canonicalLine() == value?.canonicalLine()
    }

    /// The first of `commits` (one side's, parents first) whose version of `path` holds the write
    /// where its parent's did not.
    private static func introducer(of field: String?, _ side: MergeSide, value: JSONValue?, path: [UInt8], among commits: [Commit],
                                   _ repository: Repository) throws -> Commit? {
        for commit in commits where commit.parents.count == 1 {
            guard let now = try record(path, commit.tree, repository), holds(now, field: field, side, value: value) else { continue }
            let before = try record(path, repository.commit(commit.parents[0]).tree, repository)
            if !(before.map { holds($0, field: field, side, value: value) } ?? false) { return commit }
        }
        return nil
    }

    /// `side` as made by `commit`'s checked actor; without a commit, the stamp's name marked unverified.
    private static func attributed(_ side: MergeSide, to commit: Commit?, _ repository: Repository, _ caches: EngineCaches) throws -> MergeSide {
        let unverified = "\(side.member) (unverified)"
        guard let commit else { return MergeSide(member: unverified, device: side.device, stamp: side.stamp, change: side.change) }
        let trailers = CommitTrailers(message: commit.message)
        if let actor = trailers.actor {
            return MergeSide(member: actor, device: trailers.device ?? side.device, stamp: side.stamp, change: side.change)
        }
        let signer = try signerName(commit, repository, caches)
        return MergeSide(member: signer?.member ?? unverified, device: signer?.device ?? side.device, stamp: side.stamp, change: side.change)
    }

    /// The merge's signer (the member holding its key in the merged membership), for a change of its own.
    private static func mergeAuthor(_ commit: Commit, _ repository: Repository, _ caches: EngineCaches) throws -> MergeSide {
        let trailers = CommitTrailers(message: commit.message)
        let signer = try signerName(commit, repository, caches)
        let stamp = trailers.clock.flatMap(HLC.init(parsing:)) ?? HLC(wallMillis: commit.author.time * 1000, counter: 0)
        return MergeSide(member: "\(signer?.member ?? "an unknown signer") (in merge \(commit.id.short))",
                         device: signer?.device ?? "", stamp: stamp, change: .edit)
    }

    private static func signerName(_ commit: Commit, _ repository: Repository, _ caches: EngineCaches) throws -> (member: String, device: String)? {
        guard let key = try MembershipResolution.signer(of: commit, in: repository, caches: caches) else { return nil }
        return try CommitAuthorizer.membership(in: repository, tree: commit.tree, caches: caches).holders(of: key).first.map { ($0.member.name, $0.device) }
    }

    /// The policy merge of `path` between the two sides (nil: it does not merge to a record).
    private static func policyMerge(_ policy: MergePolicy, path: [UInt8], base: ObjectID, sides: [ObjectID],
                                    _ repository: Repository) throws -> Record? {
        guard let ours = try bytes(path, sides[0], repository), let theirs = try bytes(path, sides[1], repository),
              case .merged(let merged, _) = RecordMerge.merge(policy: policy, base: try bytes(path, base, repository), ours: ours, theirs: theirs)
        else { return nil }
        return try? Record.decode(merged)
    }

    private static func record(_ path: [UInt8], _ tree: ObjectID, _ repository: Repository) throws -> Record? {
        try bytes(path, tree, repository).flatMap { try? Record.decode($0) }
    }

    private static func bytes(_ path: [UInt8], _ tree: ObjectID, _ repository: Repository) throws -> [UInt8]? {
        guard let entry = try repository.entry(at: String(decoding: path, as: UTF8.self), inTree: tree), entry.kind == .blob else { return nil }
        return try repository.blob(entry.id)
    }

    /// What a merge's two sides both changed since their merge base: the records (lww and
    /// delete-wins kinds, by the merge's kinds table) where it may have left a write out. The audit
    /// index names them; `inMerge` reads them.
    struct Contested {
        let base: ObjectID
        let baseTree: ObjectID
        let sides: [ObjectID]
        let records: [(path: [UInt8], kind: RecordKind, id: String)]

        /// nil: not a merge of two parents with a merge base.
        init?(_ commit: Commit, _ repository: Repository) throws {
            guard commit.parents.count == 2, let base = try repository.mergeBase(commit.parents[0], commit.parents[1]) else { return nil }
            let baseTree = try repository.commit(base).tree
            let sides = try commit.parents.map { try repository.commit($0).tree }
            let changed = try sides.map { Set(try repository.treeChanges(from: baseTree, to: $0).map(\.path)) }
            let kinds = try LostEdit.bytes(Array(KindsTable.path.utf8), commit.tree, repository).flatMap { try? KindsTable.decode($0) } ?? .empty
            (self.base, self.baseTree, self.sides) = (base, baseTree, sides)
            records = changed[0].intersection(changed[1]).sorted { $0.lexicographicallyPrecedes($1) }.compactMap { path in
                guard case .success(.record(let kind, let id)) = ProfilePathRules.classify(path, kinds: kinds), kind.policy != .append else { return nil }
                return (path, kind, id)
            }
        }
    }
}
