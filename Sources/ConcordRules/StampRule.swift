import ConcordModel

/// Records speak only for their signer (docs/security.md, rule 6; data format 7): a pure function of
/// a record file's bytes after a commit and before it, so a device's incoming check, the server's
/// pre-receive hook and the tests decide alike. `CommitAuthorizer` (ConcordKit) reads the bytes.
///
/// A record file makes claims about who wrote what: its envelope (`updatedAt`/`updatedBy`/`device`,
/// or a tombstone's `deleted…`), each field's stamp (the envelope's for a field `fields` does not
/// list) together with the field's value, and `lastDeleted`. A commit may make a claim in its
/// signer's name (the acting member's, for a `concord switch` commit); a claim in another member's
/// name must be one the file already made before — the parent's version of it, or, for a merge, the
/// policy merge's (never merely one parent's: a merge whose second parent is an ancestor of its first
/// could otherwise take back another member's older version, or undo their delete, under their own
/// stamp; red-team finding, issue 42). A field keeps another member's stamp only with the value it
/// had under that stamp (a field removed, with no value), so nobody can put new words under someone
/// else's name, nor take theirs away under it; a stamp may move
/// from the envelope to `fields` (a write of other fields keeps the fields it did not write).
package enum StampRule {
    /// The data format from which the rule holds: commits whose first parent's `profile.json` is of
    /// this format or newer. Stamps in earlier history, up to the upgrade commit, stay as they are.
    package static let firstFormat = 7

    /// Whether a commit whose first parent's `profile.json` has format `parentFormat` is held to the rule.
    package static func applies(parentFormat: Int) -> Bool { parentFormat >= firstFormat }

    /// Why record file `label` (`kind/id`), as `after` holds it, makes a claim in another member's
    /// name than `signer` that none of `before` (the parent's version; for a merge, the policy
    /// merge's; nil where there was none) made. Nil: it does not. A file that does
    /// not read as a record is the structural check's to refuse, not this rule's.
    package static func recordProblem(_ label: String, after: [UInt8]?, before: [[UInt8]?], signer: String) -> Violation? {
        guard let after, let record = try? Record.decode(after) else { return nil }
        let earlier = before.compactMap { bytes in bytes.flatMap { try? Record.decode($0) } }
        guard let (claim, stamp) = foreignClaim(record, signer: signer, earlier: earlier) else { return nil }
        return Violation(label, "it writes \(claim) stamped \(stamp), in \(stamp.member)'s name, but \(signer) signed it; a commit "
                             + "writes stamps of its signer only (updatedBy and field stamps name who signed it, or stay as the parent "
                             + "had them): write the record as yourself with 'concord put'")
    }

    /// Why a merge that lacks record file `label` where its policy merge has it is refused: the
    /// removal would be no one's (a delete is a tombstone in its signer's name, `concord rm`).
    package static func mergeRemoval(_ label: String) -> Violation {
        Violation(label, "the merge removes it where merging its parents keeps it; a merge takes what merging its parents gives, "
                      + "and a record is deleted by a commit of its own: merge with 'concord sync', then 'concord rm' it")
    }

    /// The first claim of `record` in another member's name than `signer` that no version of `earlier` made.
    private static func foreignClaim(_ record: Record, signer: String, earlier: [Record]) -> (String, WriteStamp)? {
        func foreign(_ stamp: WriteStamp) -> Bool { !stamp.member.utf8.elementsEqual(signer.utf8) }
        let envelope = WriteStamp(at: record.stamp, member: record.member, device: record.device)
        guard let data = record.data else {
            guard foreign(envelope) else { return nil }
            let kept = earlier.contains { $0.isDeleted && WriteStamp(at: $0.stamp, member: $0.member, device: $0.device) == envelope }
            return kept ? nil : ("a delete", envelope)
        }
        let known = Set(earlier.flatMap(stamps(of:)))
        if foreign(envelope), !known.contains(envelope) { return ("its updatedBy", envelope) }
        if let lastDeleted = record.lastDeleted, foreign(lastDeleted), !known.contains(lastDeleted) { return ("its lastDeleted", lastDeleted) }
        // A field the file had before and lacks now is a removal, claimed by its stamp there (the envelope's).
        let before = earlier.flatMap { $0.data.map { Array($0.keys) } ?? [] }
        for name in Set(data.keys).union(record.fieldStamps.keys).union(before).sorted() {
            let stamp = record.fieldStamps[name] ?? envelope
            guard foreign(stamp) else { continue }
            let kept = earlier.contains { old in
                guard let oldData = old.data else { return false }
                return (old.fieldStamps[name] ?? WriteStamp(at: old.stamp, member: old.member, device: old.device)) == stamp
                    && oldData[name] == data[name]
            }
            if !kept { return ("field \"\(name)\"", stamp) }
        }
        return nil
    }

    /// Every stamp a record file holds: its envelope, its field stamps and its `lastDeleted`.
    private static func stamps(of record: Record) -> [WriteStamp] {
        [WriteStamp(at: record.stamp, member: record.member, device: record.device)] + Array(record.fieldStamps.values)
            + (record.lastDeleted.map { [$0] } ?? [])
    }
}
