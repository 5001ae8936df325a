import ConcordModel
import ConcordTrust

/// The decisions behind leaving out of a merge what a member did concurrently with losing their
/// rights (docs/security.md, "Concurrent changes to membership"), as pure functions of values:
/// memberships on a side and in the merge, a commit's signer and the paths it changed, the kinds.
/// ConcordKit's `RightsTakenAway` reads the trees, walks the commits and writes the merge index;
/// what it keeps and leaves out is decided here.
package enum RightsTakenAwayRule {
    /// The members active on a side (`there`) who have fewer rights in the merged membership,
    /// each with the rights the merge leaves them: revoked (not active in the merge, or not in it:
    /// then as they were on the side, revoked), or active with a lower role. The first pass: their
    /// changes on that side count only as far as these rights allow.
    package static func lowered(there: Membership, merged: Membership) -> [String: Member] {
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
        return lowered
    }

    /// Every member active on a side (`there`), with the lesser of their rights there and in the
    /// merge: revoked when the merge has them but not active, and the lower of the two roles (one
    /// the merge does not have at all keeps their rights on the side). The second pass, where the
    /// merge ends with other kinds than the side had: everyone's changes there are judged under
    /// those kinds with these rights.
    package static func capped(there: Membership, merged: Membership) -> [String: Member] {
        var everyone = [String: Member]()
        for member in there.members.values where member.status == .active {
            var now = merged.members[member.name] ?? member
            if now.status != .active { now.status = .revoked }
            now.role = min(now.role, member.role)
            everyone[member.name] = now
        }
        return everyone
    }

    /// The device keys members active on a side (`there`) held there and no longer hold in the merge
    /// (a key removed, on the other line or in the resolution), each with its member as revoked: a
    /// commit that key signed on that side answers as a revoked member's, so a removed key signs
    /// nothing the merge keeps (docs/security.md, "A removed key stays removed").
    package static func keysRemoved(there: Membership, merged: Membership) -> [SSHPublicKey: Member] {
        var removed = [SSHPublicKey: Member]()
        for member in there.members.values where member.status == .active {
            let kept = Set((merged.members[member.name].flatMap { $0.status == .active ? $0.keys : nil } ?? []).map(\.publicKey))
            for key in member.keys where !kept.contains(key.publicKey) {
                var lost = merged.members[member.name] ?? member
                lost.status = .revoked
                removed[key.publicKey] = lost
            }
        }
        return removed
    }

    /// Of `candidates` (name → their rights in the merge), the members who answer for a commit
    /// signed by `signer`: whoever holds that key on the side (`there`) or in the merge, and the
    /// member its `Concord-Actor` trailer names (`actor`); sorted by name.
    package static func responsible(signer: SSHPublicKey, actor: String?, there: Membership, merged: Membership,
                                    candidates: [String: Member]) -> [Member] {
        var names = Set(there.holders(of: signer).map(\.member.name) + merged.holders(of: signer).map(\.member.name))
        if let actor { names.insert(actor) }
        return names.sorted().compactMap { candidates[$0] }
    }

    /// Of the paths a commit changed (`paths`, in the order the tree diff gives them), which change
    /// by which of the `responsible` members is left out under `kinds`: each path but the member
    /// and invitation files (the membership resolution's to judge) that a member may not change,
    /// in order of paths, then of `responsible`.
    package static func leftOut(_ paths: [String], by responsible: [Member], kinds: KindsTable) -> [(path: String, member: String)] {
        var leftOut = [(path: String, member: String)]()
        for path in paths where !isAuthority(path) {
            for member in responsible where mayNotChange(path, member, kinds: kinds) {
                leftOut.append((path, member.name))
            }
        }
        return leftOut
    }

    /// A log day file left out: the merged file's `entries` but those written by `members` (who lost
    /// their rights) that the version kept (`kept`: the source's entries) does not have.
    package static func logEntries(_ entries: [LogEntry], keeping kept: [LogEntry], droppingThoseBy members: Set<String>) -> [LogEntry] {
        let keptEntries = Set(kept.map(\.identity))
        return entries.filter { !members.contains($0.by) || keptEntries.contains($0.identity) }
    }

    /// A record left out that the kept version lacks stays (files are never removed) as a tombstone
    /// of the version left out: deleted by its own writer, at its own stamp.
    package static func tombstone(of record: Record) -> Record {
        Record(id: record.id, kind: record.kind, device: record.device, member: record.member, stamp: record.stamp, state: .deleted)
    }

    /// Whether `member`, with the rights the merge leaves them, may not change `path`.
    static func mayNotChange(_ path: String, _ member: Member, kinds: KindsTable) -> Bool {
        member.status != .active || AccessRule.mayChange(path, by: member, kinds: kinds) != nil
    }

    /// Member and invitation files: what the membership resolution decides, never left out here.
    static func isAuthority(_ path: String) -> Bool {
        path.hasPrefix(ProfilePaths.membersDirectory + "/") || path.hasPrefix(ProfilePaths.invitationsDirectory + "/")
    }
}
