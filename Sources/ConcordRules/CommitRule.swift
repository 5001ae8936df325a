import ConcordModel
import ConcordTrust

/// Why a rule refuses a commit: the path it names (nil: the commit as a whole) and the reason.
package struct Violation: Error, Sendable, Equatable {
    package let change: String?
    package let reason: String

    package init(_ change: String?, _ reason: String) {
        self.change = change
        self.reason = reason
    }
}

/// The decisions of the validity rule (docs/security.md, rules 2–5) that go beyond one signer and
/// one path (`AccessRule`), as pure functions of what ConcordKit reads from a commit, its parents and
/// their policy merge: memberships, kinds tables, the changed paths and the bytes of the files the
/// rule reads. No git and no I/O, so a device's incoming check, a server's pre-receive hook and the
/// tests decide alike. `CommitAuthorizer` (ConcordKit) reads the values and calls these in order.
package enum CommitRule {
    private static let membersPrefix = Array((ProfilePaths.membersDirectory + "/").utf8)

    /// Whether `path` is under `.concord/members/`.
    package static func isMemberPath(_ path: [UInt8]) -> Bool { path.starts(with: membersPrefix) }

    /// Rule 3's first refusal: a merge commit has at most two parents.
    package static func parentCountProblem(_ count: Int) -> String? {
        count <= 2 ? nil : "it merges \(count) parents; a merge commit has two (merge with 'concord sync' or 'concord merge')"
    }

    /// An invitation admits once: a merge that brings two acceptances of `member`'s invitation together.
    package static func admittedTwice(_ member: Member) -> Violation {
        Violation(ProfilePaths.member(member.name),
                  "it merges two acceptances of the invitation for \(member.name), with different keys; an invitation admits once: "
                      + "the acceptance that reached the remote first stands, and the other device asks \(member.addedBy) for a new invitation")
    }

    /// Why a merge's signer (`key`) is refused when the merged membership (`merged`) does not make them
    /// an active member: named as the merged membership, else a parent (`parents`, in order), knows them.
    /// `label`: the refusal's signer so far; returns the signer as the refusal names it, and the reason.
    package static func mergeSignerRefusal(key: SSHPublicKey, merged: Membership, parents: [Membership],
                                           label: String) -> (signer: String, reason: String) {
        var name = merged.holders(of: key).first?.member.name
        var signer = label
        for membership in parents where name == nil {
            if let holder = membership.holders(of: key).first {
                signer = "\(holder.member.name)@\(holder.device)"
                name = holder.member.name
            }
        }
        let status = name.flatMap { merged.members[$0]?.status.rawValue } ?? "not a member"
        let who = name.map { "\($0) is \(status)" } ?? "no member holds its key"
        return (signer, who + " in the merged membership of the parents it merges")
    }

    /// The member a commit is judged as (`concord switch`): its signer, unless its `Concord-Actor`
    /// trailer (`actor`, one of `actorCount`) names another member. Then that member must be active in
    /// the parent's membership, the commit must have one parent and change records and log files only
    /// (never membership, kinds or settings documents), and it is judged as the acting member with the
    /// LOWER of the two roles: a switch never gives a device more than its owner may do, nor the
    /// acting member more than theirs. `parent` and `kinds`: the parent's (nil: a root commit).
    package static func actingMember(actor: String?, actorCount: Int, signer: CommitSigner, parentCount: Int,
                                     parent: Membership?, kinds: KindsTable?, changes: [[UInt8]]) -> Result<Member, Violation> {
        guard actorCount <= 1 else {
            return .failure(Violation(nil, "it has \(actorCount) Concord-Actor trailers: a commit names one acting member"))
        }
        guard let actor, actor != signer.member.name else { return .success(signer.member) }
        guard parentCount == 1, let parent, let kinds else {
            return .failure(Violation(nil, "its Concord-Actor trailer names \(actor), but \(signer.member.name)'s key signed it, and a commit "
                                          + "for a member acting on another's device has exactly one parent"))
        }
        guard var acting = parent.members[actor], acting.status == .active else {
            return .failure(Violation(nil, "its Concord-Actor trailer names \(actor), who is not an active member, but \(signer.member.name)'s key signed it"))
        }
        for path in changes {
            switch ProfilePathRules.classify(path, kinds: kinds) {
            case .success(.record), .success(.logDay): continue
            default:
                return .failure(Violation(AccessRule.label(String(decoding: path, as: UTF8.self), kinds: kinds),
                                          "acting for \(actor) on \(signer.member.name)'s device, a commit writes records and logs only; "
                                              + "membership and settings documents are changed by a member as themselves"))
            }
        }
        acting.role = min(acting.role, signer.member.role)
        return .success(acting)
    }

    /// A merge whose tree differs from the policy merge is judged as its signer (`merged`: as the merged
    /// membership has them) with the LOWEST role they hold there and in each parent (`parents`), and
    /// they must be active in each (Guix's intersection): a role held only on a side someone has since
    /// demoted them on gives nothing.
    package static func judgedInMerge(_ merged: Member, parents: [Membership]) -> Result<Member, Violation> {
        var judged = merged
        for membership in parents {
            guard let there = membership.members[merged.name], there.status == .active else {
                return .failure(Violation(nil, "its tree differs from the policy merge of its parents, and \(merged.name) is not an "
                                              + "active member in both of them: merge with 'concord sync' or 'concord merge'"))
            }
            judged.role = min(judged.role, there.role)
        }
        return .success(judged)
    }

    /// Membership is the replay of the history's own membership commits (`MembershipResolution`), which
    /// a merge's own changes (`differences` from the policy merge) are not: a merge changes no member or
    /// invitation file.
    package static func mergeAuthorityProblem(_ differences: [[UInt8]]) -> Violation? {
        guard let path = differences.first(where: MembershipResolution.isAuthority) else { return nil }
        return Violation(String(decoding: path, as: UTF8.self),
                         "a merge changes member and invitation files only as merging its parents does; "
                             + "make a membership change in a commit of its own (merge with 'concord sync' or 'concord merge')")
    }

    /// Whether rule 2 reads the bytes of changed file `path` (before and after) to judge it: the
    /// judged member's own member file, or a log file under `kinds` (the parent's).
    package static func readsBytes(of path: [UInt8], judged: Member, kinds: KindsTable) -> Bool {
        if String(decoding: path, as: UTF8.self) == ProfilePaths.member(judged.name) { return true }
        if case .success(.logDay) = ProfilePathRules.classify(path, kinds: kinds) { return true }
        return false
    }

    /// Rule 2 for one changed path, under every kinds table that applies (`kinds`: the parent's first;
    /// for a merge, the policy merge's and each parent's): writable by `judged`'s role, and a log only
    /// grows, with what anyone adds (Admins too) the acting member's. `files`: the file's bytes before
    /// and after when `readsBytes` asked for them.
    package static func changeProblem(_ path: [UInt8], by judged: Member, kinds: [KindsTable],
                                      files: (before: [UInt8]?, after: [UInt8]?)?) -> Violation? {
        let text = String(decoding: path, as: UTF8.self)
        let own = text == ProfilePaths.member(judged.name) ? files : nil
        for table in kinds {
            if let reason = AccessRule.mayChange(text, by: judged, kinds: table, ownMemberFile: own) {
                return Violation(AccessRule.label(text, kinds: table), reason)
            }
        }
        if let first = kinds.first, case .success(.logDay) = ProfilePathRules.classify(path, kinds: first),
           let problem = AccessRule.logAppendProblem(before: files?.before ?? [], after: files?.after, by: judged) {
            return Violation(AccessRule.label(text, kinds: first), problem)
        }
        return nil
    }

    /// A key belongs to one member (rule 5): no member file the commit writes (`written`) gives a key
    /// another member holds — in the commit's own membership (`after`) or any parent's (`parents`),
    /// active, invited or revoked — to a different member. (Otherwise a Viewer who lists an Admin's
    /// public key as their own device makes every later commit by that Admin theirs.)
    package static func keyGivenAway(written: [[UInt8]], after: Membership, parents: [Membership]) -> Violation? {
        let memberships = [after] + parents
        for path in written {
            guard case .success(.member(let name)) = ProfilePathRules.classify(path, kinds: .empty),
                  let member = after.members[name] else { continue }
            for key in member.keys {
                for membership in memberships {
                    if let other = membership.holders(of: key.publicKey).first(where: { $0.member.name != name }) {
                        return Violation(String(decoding: path, as: UTF8.self),
                                         "it gives \(name) the key of \(other.member.name)'s device \(other.device) "
                                             + "(\(key.publicKey.fingerprint)); a key belongs to one member")
                    }
                }
            }
        }
        return nil
    }

    /// A name is one member whatever its case (`zed`, `Zed`; names are ASCII, and a case-insensitive
    /// file system holds one of them): a commit that adds a member file (`added`: their names) whose
    /// name differs only in case from another member's in `parent` is invalid.
    package static func nameTakenInAnotherCase(added: [String], parent: Membership) -> Violation? {
        for name in added {
            if let other = parent.members.keys.sorted().first(where: { $0 != name && $0.lowercased() == name.lowercased() }) {
                return Violation(ProfilePaths.member(name), "\(name) differs only in case from \(other), a member already; a name is one member whatever its case")
            }
        }
        return nil
    }

    /// Whether a commit whose parents' `profile.json` have `parentFormats` must prove the keys it adds
    /// (from format 5 on; for a merge, either parent's).
    package static func provesKeys(parentFormats: [Int]) -> Bool {
        parentFormats.contains { $0 >= KeyProof.firstFormat }
    }

    /// Only its holder adds a key (rule 5): each member file written (`files`, path with its member
    /// before and after: the parent's, or the policy merge's for a merge) may hold a key its old version
    /// did not hold with the same proof only with that key's proof for profile `profileID` and the
    /// member (`KeyProof.unproven`), unless `judged` is an active Admin writing another member's file.
    package static func unprovenKey(_ files: [(path: String, before: Member?, after: Member)], judged: Member,
                                    profileID: String) -> Violation? {
        for file in files {
            if let (key, problem) = KeyProof.unproven(before: file.before, after: file.after, writer: judged, profileID: profileID) {
                return Violation(file.path, "it adds device \(key.device)'s key (\(key.publicKey.fingerprint)) to \(file.after.name), and "
                                     + "\(problem); a key enters a member file only with its holder's proof of possession (an Admin may "
                                     + "vouch for another member's key)")
            }
        }
        return nil
    }

    /// A profile never ends with no active Admin: a commit that changes member files may not leave
    /// none (`after`) where its parent (`parent`) had one. (Concurrent departures of the last Admins
    /// are each valid alone; their merge keeps the most senior one.)
    package static func noAdminLeft(after: Membership, parent: Membership) -> Violation? {
        func hasAdmin(_ membership: Membership) -> Bool { membership.members.values.contains { $0.status == .active && $0.role == .admin } }
        guard !hasAdmin(after), hasAdmin(parent) else { return nil }
        return Violation(ProfilePaths.membersDirectory, "it leaves the profile with no active Admin; make another member an Admin first")
    }

    /// The open invitations members of `membership` joined by, by id, with how many joined each.
    package static func invitationsJoined(_ membership: Membership) -> [(id: String, count: Int)] {
        var joined = [String: Int]()
        for member in membership.members.values {
            if let id = member.invitation { joined[id, default: 0] += 1 }
        }
        return joined.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Open invitations are bounded on every commit, merges included: a tree holding more members who
    /// joined by an open invitation than it has uses, or members naming one it does not hold, is
    /// refused. `joined`: `invitationsJoined` of the commit's membership; `invitations`: those of them
    /// the commit's tree holds (that read).
    package static func invitationUseProblem(joined: [(id: String, count: Int)], invitations: [String: OpenInvitation]) -> Violation? {
        for (id, count) in joined {
            let path = ProfilePaths.invitation(id)
            guard let invitation = invitations[id] else {
                return Violation(path, "members name open invitation \(id), which the profile does not hold")
            }
            if count > invitation.uses {
                return Violation(path, "open invitation \(id) admits \(invitation.uses) members and this commit makes it \(count)")
            }
        }
        return nil
    }
}
