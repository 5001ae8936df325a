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
enum Acceptance {
    /// Why `after` is not a valid acceptance of `before` signed by `signer`; nil when it is.
    static func problem(before: Member, after: Member, signer: SSHPublicKey, root: String) -> String? {
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
                  let bound = try? SSHSignature.verify(acceptance, message: Invitation.acceptanceMessage(root: root, member: before.name, key: signer),
                                                       namespace: Invitation.acceptanceNamespace),
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
    static func openProblem(invitation: OpenInvitation, used: Int, member: Member, signer: SSHPublicKey, root: String) -> String? {
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
              let bound = try? SSHSignature.verify(acceptance, message: Invitation.acceptanceMessage(root: root, member: member.name, key: signer),
                                                   namespace: Invitation.acceptanceNamespace),
              bound == invitation.key else {
            return "the open invitation's one-time key did not sign the accepting key"
        }
        return nil
    }
}
