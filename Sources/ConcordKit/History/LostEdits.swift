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
    public let loser: MergeSide
    /// The commit that made the losing write (nil if it could not be found on its side).
    public let loserCommit: String?
    public let winner: MergeSide
    /// The merge that did not keep it, and that merge's date (its signer's clock, seconds).
    public let merge: String
    public let mergeTime: Int64

    /// Every write merge `commit` (two parents) did not keep, by record path and field.
    static func inMerge(_ commit: Commit, repository: Repository) throws -> [LostEdit] {
        guard commit.parents.count == 2, let base = try repository.mergeBase(commit.parents[0], commit.parents[1]) else { return [] }
        let baseTree = try repository.commit(base).tree
        let sides = try commit.parents.map { try repository.commit($0).tree }
        let kinds = try kindsTable(commit.tree, repository)
        var changed = [Set<[UInt8]>]()
        for tree in sides { changed.append(Set(try repository.treeChanges(from: baseTree, to: tree).map(\.path))) }
        var out = [LostEdit]()
        var sideCommits = [Int: [Commit]]()
        for path in changed[0].intersection(changed[1]).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            guard case .success(.record(let kind, let id)) = ProfilePathRules.classify(path, kinds: kinds), kind.policy != .append,
                  let ours = try record(path, sides[0], repository), let theirs = try record(path, sides[1], repository),
                  let merged = try record(path, commit.tree, repository) else { continue }
            let lost = RecordMerge.lostWrites(base: try record(path, baseTree, repository), ours: ours, theirs: theirs, merged: merged)
            for write in lost {
                // The side that made it: the one whose version holds that write.
                let side = holds(ours, write) ? 0 : 1
                if sideCommits[side] == nil { sideCommits[side] = try repository.newCommits(from: commit.parents[side], excluding: [base]) }
                let made = try commitOf(write.loser, path: path, among: sideCommits[side] ?? [], repository)
                // Seen and overwritten by the other side (a history merged more than once): not lost.
                if let made, try repository.isAncestor(made.id, of: commit.parents[1 - side]) { continue }
                // Its author is who made its commit (the signer, or the member acting on the signer's device:
                // the validity rule holds a checked commit's Concord-Actor to that), not the name a record's
                // stamp gives, which its writer chose.
                var loser = write.loser
                if let made, let actor = CommitTrailers(message: made.message).actor, actor != loser.member {
                    loser = MergeSide(member: actor, device: CommitTrailers(message: made.message).device ?? loser.device,
                                      stamp: loser.stamp, change: loser.change)
                }
                out.append(LostEdit(record: "\(kind.name)/\(id)", field: write.field, loser: loser, loserCommit: made?.id.hex,
                                    winner: write.winner, merge: commit.id.hex, mergeTime: commit.author.time))
            }
        }
        return out
    }

    private static func holds(_ record: Record, _ write: LostWrite) -> Bool {
        guard let field = write.field else { return record.isDeleted && record.stamp == write.loser.stamp && record.member == write.loser.member }
        return record.stamp(ofField: field).map { $0.at == write.loser.stamp && $0.member == write.loser.member && $0.device == write.loser.device } ?? false
    }

    /// The commit among one side's commits since the merge base (parents first) that wrote `side`
    /// into `path`: the newest one whose clock trailer is the write's stamp and that changed the file.
    private static func commitOf(_ side: MergeSide, path: [UInt8], among commits: [Commit], _ repository: Repository) throws -> Commit? {
        for commit in commits.reversed() where commit.parents.count == 1 {
            guard CommitTrailers(message: commit.message).clock.flatMap(HLC.init(parsing:)) == side.stamp else { continue }
            let parentTree = try repository.commit(commit.parents[0]).tree
            if try repository.treeChanges(from: parentTree, to: commit.tree).contains(where: { $0.path == path }) { return commit }
        }
        return nil
    }

    private static func record(_ path: [UInt8], _ tree: ObjectID, _ repository: Repository) throws -> Record? {
        guard let entry = try repository.entry(at: String(decoding: path, as: UTF8.self), inTree: tree), entry.kind == .blob else { return nil }
        return try? Record.decode(repository.blob(entry.id))
    }

    private static func kindsTable(_ tree: ObjectID, _ repository: Repository) throws -> KindsTable {
        guard let entry = try repository.entry(at: KindsTable.path, inTree: tree), entry.kind == .blob else { return .empty }
        return (try? KindsTable.decode(repository.blob(entry.id))) ?? .empty
    }
}
