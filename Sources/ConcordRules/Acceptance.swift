import ConcordModel
import ConcordTrust

/// The one commit a member who is not yet active may sign: the acceptance of their invitation
/// (docs/security.md, rule 1). Given the member as the parent commit has them (`invited`) and as the
/// commit leaves them, and the key that signed the commit, it is an acceptance iff:
/// - the member becomes `active`, with the same name, role and who-added-them, no expiry and no
///   one-time key left, and no revocation;
/// - its keys are exactly one key, the signer's;
/// - for an invitation to a known key, the signer's key is that key;
/// - for a link invitation, the parent's one-time key signed (`acceptance`, namespace
///   `concord-acceptance`) the signer's key together with the root commit id and the member.
/// The caller checks that the commit changes nothing else.
package enum Acceptance {
    /// The SSHSIG namespace of the one-time key's signature binding an accepting device's key.
    package static let namespace = "concord-acceptance"

    /// What the one-time key signs to bind an accepting device's key: the root, the member, the key.
    package static func message(root: String, member: String, key: SSHPublicKey) -> [UInt8] {
        Array("\(root)\n\(member)\n\(key.line(comment: nil))\n".utf8)
    }

    /// Why `after` is not a valid acceptance of `before` signed by `signer`; nil when it is.
    package static func problem(before: Member, after: Member, signer: SSHPublicKey, root: String) -> String? {
        guard before.status == .invited else { return "\(before.name) has no pending invitation" }
        guard after.status == .active, after.name == before.name, after.role == before.role, after.addedBy == before.addedBy,
              after.addedAt == before.addedAt, after.expiresAt == nil, after.invitationKey == nil,
              after.revokedBy == nil, after.revokedAt == nil else {
            return "an acceptance may only make \(before.name) active, as invited"
        }
        guard after.keys.count == 1, after.keys[0].publicKey == signer else {
            return "an acceptance must hold exactly the key that signs it"
        }
        if let oneTime = before.invitationKey {
            guard let acceptance = after.acceptance,
                  let bound = try? SSHSignature.verify(acceptance, message: message(root: root, member: before.name, key: signer),
                                                       namespace: namespace),
                  bound == oneTime else {
                return "the invitation's one-time key did not sign the accepting key"
            }
        } else {
            guard before.keys.contains(where: { $0.publicKey == signer }) else {
                return "the invitation is for another key"
            }
        }
        return nil
    }

    /// Why `member`, a member file that `commit` adds, is not a valid acceptance of open invitation
    /// `invitation` (of which `used` places were taken in the parent) signed by `signer`; nil when it
    /// is: active, as the invitation's role (never Admin), added by its admin, holding exactly the
    /// signer's key, which the invitation's one-time key signed with the root and the member's name.
    package static func openProblem(invitation: OpenInvitation, used: Int, member: Member, signer: SSHPublicKey, root: String) -> String? {
        guard invitation.role != .admin else { return "an open invitation cannot make Admins" }
        guard !invitation.withdrawn else {
            return "open invitation \(invitation.id) was withdrawn: the Admin who opened it was revoked or demoted concurrently"
        }
        guard used < invitation.uses else { return "all \(invitation.uses) places of open invitation \(invitation.id) were taken" }
        guard member.status == .active, member.role == invitation.role, member.invitation == invitation.id,
              member.addedBy == invitation.invitedBy, member.expiresAt == nil, member.invitationKey == nil,
              member.revokedBy == nil, member.revokedAt == nil else {
            return "joining by open invitation \(invitation.id) may only add an active \(invitation.role.rawValue), as it invites"
        }
        guard member.keys.count == 1, member.keys[0].publicKey == signer else {
            return "an acceptance must hold exactly the key that signs it"
        }
        guard let acceptance = member.acceptance,
              let bound = try? SSHSignature.verify(acceptance, message: message(root: root, member: member.name, key: signer),
                                                   namespace: namespace),
              bound == invitation.key else {
            return "the open invitation's one-time key did not sign the accepting key"
        }
        return nil
    }
}

extension Acceptance {
    /// What rule 1's exception says of a commit whose signer (`key`) is no active member.
    package enum Outcome: Sendable {
        /// The commit is no acceptance: the signer's refusal stands.
        case none
        /// An acceptance by this signer.
        case accepted(CommitSigner)
        /// A join by open invitation that is wrong: refused naming `signer`, with why.
        case refused(signer: String, Violation)
    }

    /// A commit as the acceptance of an invitation: one parent (`parentCount`), one changed path
    /// (`changes`), the accepting member's own file (`after`: as the commit leaves it, nil when it does
    /// not read; `added`: absent in the parent), changed as an acceptance may change it and signed by
    /// the key it binds. `parent` and `kinds`: the parent's (nil: a root commit); `invitation`: the open
    /// invitation `after` names, as the parent holds it; `root`: the profile's first commit id (asked
    /// only when needed).
    ///
    /// Joining by an open invitation adds the member file instead (`openProblem`); a commit that adds a
    /// member file naming an open invitation and holding the signer's key is refused with what is wrong.
    package static func judge(changes: [[UInt8]], parentCount: Int, after: Member?, added: Bool, key: SSHPublicKey,
                              parent: Membership?, kinds: KindsTable?, invitation: OpenInvitation?, root: () throws -> String) rethrows -> Outcome {
        guard let parent, let kinds, parentCount == 1, changes.count == 1 else { return .none }
        let path = String(decoding: changes[0], as: UTF8.self)
        guard case .success(.member(let name)) = ProfilePathRules.classify(changes[0], kinds: kinds),
              let after, after.name == name else { return .none }
        if let before = parent.members[name] {
            guard problem(before: before, after: after, signer: key, root: try root()) == nil else { return .none }
        } else {
            guard added, let id = after.invitation, after.keys.contains(where: { $0.publicKey == key }) else { return .none }
            let signer = "\(name)@\(after.keys.first { $0.publicKey == key }?.device ?? "?")"
            guard let invitation else {
                return .refused(signer: signer, Violation(path, "it joins by open invitation \(id), which the profile before it does not hold"))
            }
            let used = invitation.used(by: parent.members.values)
            if let problem = openProblem(invitation: invitation, used: used, member: after, signer: key, root: try root()) {
                return .refused(signer: signer, Violation(path, problem))
            }
        }
        return .accepted(CommitSigner(member: after, device: after.keys[0].device))
    }
}
