import ConcordModel
import ConcordTrust

/// The decisions behind leaving out of a merge what a member did concurrently with losing their
/// rights (docs/security.md, "Concurrent changes to membership"), as pure functions of values:
/// memberships on a side and in the merge, a commit's signer and the paths it changed, the kinds.
/// ConcordKit's `RightsTakenAway` reads the trees, walks the commits and writes the merge index;
/// what it keeps and leaves out is decided here.
package enum RightsTakenAwayRule {
    /// Who answers for a side commit where it lands.
    package enum Answer: Sendable, Equatable {
        /// No active member holds the key that signed it there: all of it is left out, as `member`'s
        /// (its holder where it lands, or where it was made). `removed`: no member holds the key
        /// where it lands (a key's removal), else its holder is revoked there.
        case keyGone(member: String, removed: Bool)
        /// The members who answer for it, with the rights they hold where it lands: the key's active
        /// holder, and the member its `Concord-Actor` trailer names (revoked when not active there).
        case members([Member])
    }

    /// Who answers for a side commit signed by `signer`, naming `actor` in its `Concord-Actor`
    /// trailer, where it lands (`landing`: the main line's membership with the side's decisions
    /// before it replayed) — never where its signer made it (`madeUnder`, its parent's membership:
    /// read only to name a key's member the landing no longer has). So a demotion, revocation or
    /// key removal that reached the main line first takes effect on every side commit, whatever the
    /// side decided after (a self-demotion, a departure, a key removing itself), and a member's own
    /// later decision on the side takes nothing from what they wrote before it.
    package static func answering(signer: SSHPublicKey, actor: String?, landing: Membership, madeUnder: Membership) -> Answer {
        guard let holder = landing.holders(of: signer).first(where: { $0.member.status == .active })?.member else {
            let revoked = landing.holders(of: signer).first?.member.name
            let owner = revoked ?? madeUnder.holders(of: signer).first?.member.name ?? signer.fingerprint
            return .keyGone(member: owner, removed: revoked == nil)
        }
        var members = [holder]
        if let actor, actor != holder.name {
            var acting = landing.members[actor] ?? madeUnder.members[actor]
                ?? Member(name: actor, role: .viewer, status: .revoked, keys: [], addedBy: actor, addedAt: "")
            if landing.members[actor]?.status != .active { acting.status = .revoked }
            members.append(acting)
        }
        return .members(members.sorted { $0.name < $1.name })
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

    /// A log day file left out: the merged file's `entries` but those the side commits left out
    /// added (`added`, whoever they name as their writer: an entry written acting for another member
    /// is still the signer's) that the version kept (`kept`: the main line's entries) does not have.
    package static func logEntries(_ entries: [LogEntry], keeping kept: [LogEntry], dropping added: Set<LogEntry.Identity>) -> [LogEntry] {
        let keptEntries = Set(kept.map(\.identity))
        return entries.filter { !added.contains($0.identity) || keptEntries.contains($0.identity) }
    }

    /// A record left out that the kept version lacks stays (files are never removed) as a tombstone
    /// of the version left out: deleted by its own writer, at the earliest stamp there is, never at
    /// the stamp they chose — a placeholder, which every merge gives way to another version of that id
    /// (`Record.isPlaceholder`; the seventh and eighth red-team passes).
    package static func tombstone(of record: Record) -> Record {
        Record(id: record.id, kind: record.kind, device: record.device, member: record.member,
               stamp: Record.placeholderStamp, state: .deleted)
    }

    /// Whether `member`, with the rights the merge leaves them, may not change `path` under `kinds`:
    /// also an Admin may not change a file that is none of the profile's there (a record of a kind
    /// added by a kinds change that fell).
    package static func mayNotChange(_ path: String, _ member: Member, kinds: KindsTable) -> Bool {
        if case .failure = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) { return true }
        return member.status != .active || AccessRule.mayChange(path, by: member, kinds: kinds) != nil
    }

    /// Member and invitation files: what the membership resolution decides, never left out here.
    package static func isAuthority(_ path: String) -> Bool {
        path.hasPrefix(ProfilePaths.membersDirectory + "/") || path.hasPrefix(ProfilePaths.invitationsDirectory + "/")
    }
}
