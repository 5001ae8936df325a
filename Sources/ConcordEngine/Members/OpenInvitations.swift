import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// An open invitation made by `Members.shareOpen`: the invitation file it committed and the text to send.
public struct SharedOpenInvitation: Sendable {
    /// The invitation file committed under `.concord/invitations/`.
    public let invitation: OpenInvitation
    /// The invitation to send (its `text` is the string to share with the group).
    public let text: Invitation
    /// The commit that recorded the invitation file (hex), nil if nothing was committed.
    public let commit: String?
}

/// Open invitations (`OpenInvitation`): an admin commits the invitation file and sends its link to
/// anyone; each person who accepts it commits a new member file of their own, bound by the link's
/// one-time key, until its uses are taken or it expires.
extension Members {
    /// Opens an invitation to join as `role` (not Admin), for up to `uses` people, until `expiresIn`
    /// seconds from now, through `remote`'s URL. Admins only. A format 3 profile moves to format 4
    /// in the same commit (docs/security.md).
    public func shareOpen(role: Role, uses: Int, expiresIn: Int64, remote: String = "origin",
                          as identity: Identity) throws -> SharedOpenInvitation {
        guard role != .admin else {
            throw ConcordError.invalidInput(.badInvitation, "an open invitation cannot make Admins", remedy: .inviteAdminByName)
        }
        guard (1...OpenInvitation.maxUses).contains(uses) else {
            throw ConcordError.invalidInput(.badInvitation, "an open invitation's uses must be between 1 and \(OpenInvitation.maxUses), not \(uses)")
        }
        guard expiresIn > 0 else { throw ConcordError.invalidInput(.badInvitation, "an invitation must expire in the future") }
        guard let url = try gitCall({ try repository.remoteURL(remote) }) else { throw ConcordError.unknownRemote(remote) }
        let now = profile.environment.wallClock()
        let oneTime = SigningKey.generate()
        let id = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let document = OpenInvitation(id: id, role: role, uses: uses, expiresAt: HLClock.formatInstant(now + expiresIn * 1000),
                                      invitedBy: identity.member, invitedAt: HLClock.formatInstant(now), key: oneTime.publicKey)
        let result = try profile.records.write(as: identity, asOwner: true) { transaction in
            try authorizeAdmin(identity, action: "opening an invitation")
            transaction.stage(ProfilePaths.invitation(id), document.json.canonicalBytes(),
                              RecordChange(kind: "invitations", id: id, action: .added))
            // Open invitations came with format 4; a later format is 'concord upgrade''s to make.
            if profile.info.formatVersion < OpenInvitation.firstFormat {
                let info = ProfileInfo(id: profile.info.id, name: profile.info.name, formatVersion: OpenInvitation.firstFormat,
                                       createdAt: profile.info.createdAt)
                transaction.stage(ProfilePaths.profile, info.json.canonicalBytes(), RecordChange(kind: "profile", id: "profile", action: .updated))
            }
        }
        var text = Invitation(url: url, profileID: profile.info.id, profileName: profile.info.name, root: try profile.history.rootCommit().hex,
                              member: "", role: role, expiresAt: document.expiresAt, invitedBy: identity.member,
                              oneTimeKey: oneTime.openSSHPrivateKeyFile(comment: "concord-invitation"), open: id, uses: uses, signature: "")
        text.signature = SSHSignature.sign(text.signedBytes, with: identity.key, namespace: Invitation.namespace)
        return SharedOpenInvitation(invitation: document, text: text, commit: result.commit)
    }

    /// The open invitations of this profile, read from `.concord/invitations/`, with how many joined
    /// by each. One whose Admin is no longer an active Admin is withdrawn: it admits nobody more.
    public func openInvitations() throws -> [(invitation: OpenInvitation, used: Int)] {
        let directory = profile.root.appendingPathComponent(ProfilePaths.invitationsDirectory)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let members = try list()
        return try names.filter { $0.hasSuffix(".json") }.sorted().map { name in
            let bytes = try Array(Data(contentsOf: directory.appendingPathComponent(name)))
            var invitation = try readDocument { try OpenInvitation.decode(bytes, path: ProfilePaths.invitationsDirectory + "/" + name) }
            if !Self.isActiveAdmin(invitation.invitedBy, in: members) { invitation.withdrawn = true }
            return (invitation, invitation.used(by: members))
        }
    }

    static func isActiveAdmin(_ name: String, in members: [Member]) -> Bool {
        members.contains { $0.name == name && $0.status == .active && $0.role == .admin }
    }

    /// Checks open `invitation` against this profile (a fresh clone of what it names) and commits
    /// `identity` joining by it: a new, active member file named after the identity's member, with
    /// this device's key and the one-time key's signature over it. Throws, committing nothing, when
    /// the invitation is altered, withdrawn, expired or used up, or the name is taken.
    func acceptOpen(_ invitation: Invitation, as identity: Identity) throws -> WriteResult<Member> {
        let refuse = { (why: String) in ConcordError.invitationRefused(member: identity.member, reason: why) }
        guard let id = invitation.open, let oneTimeText = invitation.oneTimeKey else { throw refuse("it is not an open invitation") }
        let path = ProfilePaths.invitation(id)
        let bytes = try? Array(Data(contentsOf: profile.root.appendingPathComponent(path)))
        // Withdrawn first: the Admin who signed it has most often lost that role (which withdrew it).
        if try profile.history.rootCommit().hex == invitation.root, let opened = bytes.flatMap({ try? OpenInvitation.decode($0, path: path) }) {
            if opened.withdrawn {
                throw refuse("it was withdrawn (the Admin who opened it was revoked or demoted at the same time); ask an Admin for a new one")
            }
            if !Self.isActiveAdmin(opened.invitedBy, in: try list()) {
                throw refuse("it was withdrawn: \(opened.invitedBy), who opened it, is no longer an active Admin; ask an Admin for a new one")
            }
        }
        let members = try checkOrigin(of: invitation, for: identity.member)
        guard let bytes else {
            throw refuse("the profile does not hold it: ask \(invitation.invitedBy) to sync and send it again")
        }
        let document = try readDocument { try OpenInvitation.decode(bytes, path: path) }
        let oneTime: SigningKey
        do { oneTime = try SigningKey(openSSHPrivateKeyFile: oneTimeText) } catch { throw refuse("its one-time key is damaged") }
        guard document.role == invitation.role, document.uses == invitation.uses, document.expiresAt == invitation.expiresAt,
              document.invitedBy == invitation.invitedBy, document.key == oneTime.publicKey else {
            throw refuse("it does not match the open invitation in the profile; ask for a new one")
        }
        guard !invitation.hasExpired(at: profile.environment.wallClock()) else {
            throw refuse("it expired at \(invitation.expiresAt); ask \(invitation.invitedBy) for a new one")
        }
        let used = document.used(by: members)
        guard used < document.uses else {
            throw refuse("all \(document.uses) of its places are taken; ask \(invitation.invitedBy) for a new one")
        }
        if let taken = members.first(where: { $0.name.lowercased() == identity.member.lowercased() }) {
            throw ConcordError.invalidInput(.alreadyThere, "the open invitation cannot be accepted as \(identity.member): \"\(profile.info.name)\" already has "
                + "a member named \(taken.name)\(taken.name == identity.member ? "" : " (a name is one member whatever its case)")",
                                            remedy: .identityOfItsOwn)
        }
        try refuseKeyHeldByAnother(identity.key.publicKey, in: members)
        let root = try profile.history.rootCommit().hex
        let member = Member(
            name: identity.member, role: document.role, status: .active,
            keys: [KeyProof.key(device: identity.device, identity.key.publicKey, member: identity.member,
                                profileID: profile.info.id, signedBy: identity)],
            addedBy: document.invitedBy, addedAt: HLClock.formatInstant(profile.environment.wallClock()),
            acceptance: SSHSignature.sign(Acceptance.message(root: root, member: identity.member, key: identity.key.publicKey),
                                          with: oneTime, namespace: Acceptance.namespace),
            invitation: id)
        // What every other device will check (`CommitAuthorizer`), checked here first.
        if let problem = Acceptance.openProblem(invitation: document, used: used, member: member, signer: identity.key.publicKey, root: root) {
            throw refuse(problem)
        }
        return try commitMember(as: identity) { (member, .added) }
    }
}
