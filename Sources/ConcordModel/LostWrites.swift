/// One write a merge did not keep: a field one side set or removed, or a delete, since the merge
/// base, that the merged record does not hold (docs/merging.md, "What was lost").
public struct LostWrite: Sendable, Equatable {
    /// The field, or nil for a delete that lost.
    public let field: String?
    /// The write that lost (a field's set or removal, or a delete), with who made it.
    public let loser: MergeSide
    /// The write the merged record holds in its place (for a field the merge deleted, the delete).
    public let winner: MergeSide
    /// The value the losing write set (nil: a removal, or a delete).
    public let value: JSONValue?
}

extension RecordMerge {
    /// The writes `ours` and `theirs` each made since `base` (nil: none) that `merged` does not
    /// keep, field by field: each side's field write that differs from the base's and is not the
    /// merged record's write for that field, and a side's delete the merged record is not. A
    /// removal lost to a delete is not one (the field is gone either way). Written on the sides
    /// alone, so the same whichever side is ours; sorted by field bytes, the delete first.
    public static func lostWrites(base: Record?, ours: Record, theirs: Record, merged: Record) -> [LostWrite] {
        let mergedWrites = merged.fieldWrites
        var out = [LostWrite]()
        for side in [ours, theirs] {
            if side.isDeleted {
                let fromBase = base.map { $0.isDeleted && $0.envelope == side.envelope } ?? false
                if !fromBase, !(merged.isDeleted && merged.envelope == side.envelope) {
                    out.append(LostWrite(field: nil, loser: MergeSide(side), winner: MergeSide(merged), value: nil))
                }
                continue
            }
            let baseWrites = base?.fieldWrites ?? [:]
            for (field, write) in side.fieldWrites where !write.isSame(as: baseWrites[field]) {
                let kept = mergedWrites[field]
                if write.isSame(as: kept) { continue }
                if write.value == nil && (merged.isDeleted || kept == nil) { continue }
                let winner: MergeSide
                if let kept {
                    winner = MergeSide(member: kept.stamp.member, device: kept.stamp.device, stamp: kept.stamp.at, change: .edit)
                } else if let deleted = merged.isDeleted ? merged.envelope : merged.lastDeleted {
                    winner = MergeSide(member: deleted.member, device: deleted.device, stamp: deleted.at, change: .delete)
                } else {
                    winner = MergeSide(merged)
                }
                out.append(LostWrite(field: field, loser: MergeSide(member: write.stamp.member, device: write.stamp.device,
                                                                    stamp: write.stamp.at, change: .edit), winner: winner, value: write.value))
            }
        }
        return out.sorted { a, b in
            switch (a.field, b.field) {
            case (nil, nil): return MergeSide.precedes(a.loser, b.loser)
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): return x.utf8.elementsEqual(y.utf8) ? MergeSide.precedes(a.loser, b.loser) : utf8Precedes(x, y)
            }
        }
    }
}

extension MergeSide {
    /// An order for listing: by stamp, member, device.
    static func precedes(_ a: MergeSide, _ b: MergeSide) -> Bool {
        WriteStamp(at: a.stamp, member: a.member, device: a.device) < WriteStamp(at: b.stamp, member: b.member, device: b.device)
    }
}
