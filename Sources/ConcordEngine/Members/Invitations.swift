import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// An invitation made by `Members.share`: the pending member file it committed and the text to send.
public struct SharedInvitation: Sendable {
    /// The pending member file committed (`status: invited`).
    public let member: Member
    /// The invitation to send; its `text` is what the invitee pastes or opens.
    public let invitation: Invitation
    /// The commit that recorded the pending member (hex), nil if nothing was committed.
    public let commit: String?
}

/// Inviting: an admin commits a pending member file (`status: invited`, an expiry, and either the
/// invitee's key or the public half of a one-time key) and gets an `Invitation` to send. Accepting
/// (`Members.accept`): the invitee clones, checks the invitation against the history it names, and
/// commits its own member file as active with its device key.
extension Members {
    /// Invites `name` as `role` until `expiresIn` seconds from now, through `remote`'s URL. With
    /// `key`, only that key can accept; without, a one-time key pair is made and its private half
    /// travels in the invitation (a link invitation). Admins only; an active or pending member
    /// cannot be invited again (revoke them first).
    public func share(_ name: String, role: Role, key: SSHPublicKey? = nil, device: String? = nil, expiresIn: Int64,
                      remote: String = "origin", as identity: Identity) throws -> SharedInvitation {
        try validate(member: name, device: device)
        guard expiresIn > 0 else { throw ConcordError.invalidInput(.badInvitation, "an invitation must expire in the future") }
        guard let url = try gitCall({ try repository.remoteURL(remote) }) else { throw ConcordError.unknownRemote(remote) }
        let now = profile.environment.wallClock()
        let expiresAt = HLClock.formatInstant(now + expiresIn * 1000)
        let oneTime = key == nil ? SigningKey.generate() : nil
        let result = try commitMember(as: identity) {
            try authorizeAdmin(identity)
            let members = try list()
            if let existing = members.first(where: { $0.name == name }), existing.status != .revoked {
                throw ConcordError.invalidInput(.alreadyThere, "\(name) is already \(existing.status == .invited ? "invited" : "a member") "
                                                + "of \"\(profile.info.name)\": revoke them first to invite them again")
            }
            if let key { try refuseKeyHeldByAnother(key, in: members) }
            try refuseNameTakenInAnotherCase(name, in: members)
            let member = Member(name: name, role: role, status: .invited,
                                keys: key.map { [Member.Key(device: device ?? "device", publicKey: $0)] } ?? [],
                                addedBy: identity.member, addedAt: HLClock.formatInstant(now), expiresAt: expiresAt,
                                invitationKey: oneTime?.publicKey)
            return (member, .added)
        }
        let root = try profile.history.rootCommit().hex
        var invitation = Invitation(url: url, profileID: profile.info.id, profileName: profile.info.name, root: root, member: name,
                                    role: role, expiresAt: expiresAt, invitedBy: identity.member,
                                    oneTimeKey: oneTime?.openSSHPrivateKeyFile(comment: "concord-invitation"), signature: "")
        invitation.signature = SSHSignature.sign(invitation.signedBytes, with: identity.key, namespace: Invitation.namespace)
        return SharedInvitation(member: result.value, invitation: invitation, commit: result.commit)
    }

    /// Checks `invitation` against this profile (a fresh clone of what it names) and `identity`, and
    /// commits the acceptance: the member file active, with this device's key, the one-time key
    /// replaced by its signature over the new key. Throws, committing nothing, when anything is off.
    func accept(_ invitation: Invitation, as identity: Identity) throws -> WriteResult<Member> {
        let refuse = { (why: String) in ConcordError.invitationRefused(member: invitation.member, reason: why) }
        let members = try checkOrigin(of: invitation)
        guard let pending = members.first(where: { $0.name == invitation.member }) else { throw refuse("it was withdrawn") }
        switch pending.status {
        case .active: throw refuse("it was already used")
        case .revoked: throw refuse("it was withdrawn (\(pending.revokedBy ?? "an admin") revoked it)")
        case .invited: break
        }
        guard pending.expiresAt == invitation.expiresAt, pending.role == invitation.role else {
            throw refuse("it does not match the pending invitation in the profile; ask for a new one")
        }
        guard !invitation.hasExpired(at: profile.environment.wallClock()) else {
            throw refuse("it expired at \(invitation.expiresAt); ask \(invitation.invitedBy) for a new one")
        }
        var accepted = pending
        accepted.status = .active
        accepted.expiresAt = nil
        if let oneTimeText = invitation.oneTimeKey {
            let oneTime: SigningKey
            do { oneTime = try SigningKey(openSSHPrivateKeyFile: oneTimeText) } catch { throw refuse("its one-time key is damaged") }
            guard pending.invitationKey == oneTime.publicKey else { throw refuse("its one-time key is not the one the profile holds") }
            accepted.keys = [KeyProof.key(device: identity.device, identity.key.publicKey, member: invitation.member,
                                          profileID: profile.info.id, signedBy: identity)]
            accepted.invitationKey = nil
            accepted.acceptance = SSHSignature.sign(
                Acceptance.message(root: invitation.root, member: invitation.member, key: identity.key.publicKey),
                with: oneTime, namespace: Acceptance.namespace)
        } else {
            guard pending.keys.contains(where: { $0.publicKey == identity.key.publicKey }) else {
                throw refuse("it is for another key than this device's (\(identity.key.publicKey.fingerprint))")
            }
            // The key the Admin vouched for gets its holder's proof with the acceptance.
            accepted.keys = pending.keys.map { $0.publicKey == identity.key.publicKey
                ? KeyProof.key(device: identity.device, $0.publicKey, member: invitation.member, profileID: profile.info.id, signedBy: identity)
                : $0 }
        }
        // What every other device will check (`CommitAuthorizer`), checked here first.
        if let problem = Acceptance.problem(before: pending, after: accepted, signer: identity.key.publicKey, root: invitation.root) {
            throw refuse(problem)
        }
        return try commitMember(as: identity) { (accepted, .updated) }
    }

    /// Checks that `invitation` names this profile (its root commit and id) and was signed by one of
    /// its active admins; returns the members. `member`: who a refusal names (an open invitation's joiner).
    func checkOrigin(of invitation: Invitation, for member: String? = nil) throws -> [Member] {
        let refuse = { (why: String) in ConcordError.invitationRefused(member: member ?? invitation.member, reason: why) }
        guard try profile.history.rootCommit().hex == invitation.root else {
            throw refuse("the remote's history does not start at the invitation's root commit: it is not the profile you were invited to")
        }
        guard profile.info.id == invitation.profileID else { throw refuse("the remote holds another profile") }
        let members = try list()
        let signer = try invitation.signer()
        guard let admin = members.first(where: { $0.name == invitation.invitedBy }), admin.status == .active, admin.role == .admin,
              admin.keys.contains(where: { $0.publicKey == signer }) else {
            throw refuse("it was not signed by an active admin of \"\(profile.info.name)\"")
        }
        return members
    }
}

extension Members {
    /// Accepts `invitation` into `directory`: clones what it names (every commit checked), checks the
    /// invitation against that history (root, the inviting admin's signature, the pending member
    /// file or open invitation, the expiry, the places left), commits the acceptance signed by this
    /// device's key, and pushes it by compare-and-swap. Accepted means on the remote: when another
    /// push got there first (another acceptance racing for the last place, or any commit), the clone
    /// is dropped and the whole acceptance made again on what the remote now holds, so of two
    /// acceptances racing for one place exactly one stands. When any check fails, or the remote
    /// cannot be reached, the clone is removed and nothing is left.
    ///
    public static func accept(
        _ invitation: Invitation, into directory: URL, identity: Identity, environment: ConcordEnvironment, trustHost: String? = nil
    ) throws -> (profile: Profile, sync: SyncReport) {
        try accept(invitation, into: directory, identity: identity, environment: environment, trustHost: trustHost, beforePublishing: {})
    }

    /// `accept`, with `beforePublishing` run between the acceptance commit and its push (the
    /// package's tests race it there).
    package static func accept(
        _ invitation: Invitation, into directory: URL, identity: Identity, environment: ConcordEnvironment, trustHost: String? = nil,
        beforePublishing: () throws -> Void
    ) throws -> (profile: Profile, sync: SyncReport) {
        if invitation.open == nil, identity.member != invitation.member {
            throw ConcordError.invitationRefused(member: invitation.member, reason: "it is for \(invitation.member), and this "
                + "device's identity is \(identity.member): accept it with an identity named \(invitation.member)")
        }
        if invitation.hasExpired(at: environment.wallClock()) {
            throw ConcordError.invitationRefused(member: invitation.open == nil ? invitation.member : identity.member,
                                                 reason: "it expired at \(invitation.expiresAt); ask \(invitation.invitedBy) for a new one")
        }
        // A concord server does not know this device's key before the acceptance: a link invitation's
        // one-time key is offered when it refuses this one (docs/server.md), for the clone and the acceptance's push.
        var environment = environment
        let loginKey = try invitation.oneTimeKey.map { text -> URL in
            let url = environment.home.appendingPathComponent("invitation-login-\(getpid())")
            do { try FileIO.write(Array(text.utf8), to: url.path, makingParents: false, mode: 0o600) } catch {
                throw ConcordError.io(.write, path: nil, "\(error)")
            }
            return url
        }
        defer { if let loginKey { try? FileManager.default.removeItem(at: loginKey) } }
        environment.invitationLoginKey = loginKey?.path
        for attempt in 1...Sync.maxSyncAttempts {
            let profile: Profile
            do {
                profile = try Sync.clone(url: invitation.url, into: directory, identity: identity, environment: environment, trustHost: trustHost)
            } catch let error as ConcordError where invitation.open != nil {
                // A concord server lets an open invitation's key in only while it has places left.
                switch error {
                case .authenticationFailed, .refused:
                    throw ConcordError.invitationRefused(member: identity.member, reason: "the server no longer lets this invitation in: "
                        + "all its places are taken, or it expired or was withdrawn; ask \(invitation.invitedBy) for a new one")
                default: throw error
                }
            }
            let report: SyncReport?
            do {
                if invitation.open == nil {
                    try profile.members.accept(invitation, as: identity)
                } else {
                    try profile.members.acceptOpen(invitation, as: identity)
                }
                try beforePublishing()
                report = try profile.locked { try profile.sync.publishAcceptance(as: identity, attempt: attempt) }
            } catch {
                discardClone(profile)
                throw error
            }
            if let report { return (profile, report) }
            discardClone(profile)
            usleep(useconds_t.random(in: 20_000...(60_000 * useconds_t(attempt))))
        }
        throw ConcordError.remoteKeptMoving(remote: "origin", attempts: Sync.maxSyncAttempts)
    }

    /// Removes a clone made by `accept` and its registry entry.
    private static func discardClone(_ profile: Profile) {
        try? ProfileRegistry(home: profile.environment.home).unregister(path: profile.root.path)
        try? FileManager.default.removeItem(at: profile.root)
    }
}

extension Sync {
    /// Pushes a fresh clone's acceptance commit onto the main it was made on; nil when the remote
    /// moved meanwhile. The caller holds the profile lock.
    fileprivate func publishAcceptance(as identity: Identity, attempt: Int) throws -> SyncReport? {
        let location = try remoteLocation("origin")
        let options = transportOptions(for: identity, remote: "origin", location: location)
        let tracking = try gitCall { try repository.resolveReference(Sync.trackingRef("origin")) }
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return nil }
        guard try push(head, expected: tracking, remote: "origin", location: location, options: options, attemptsLeft: 1) else { return nil }
        try gitCall { try repository.updateReference(Sync.trackingRef("origin"), to: head, expected: tracking, message: "concord: pushed") }
        try recordSync(remote: "origin", head: head)
        return SyncReport(remote: "origin", received: 0, sent: 1, changedFiles: [], resolved: [], unresolved: [], head: head.hex, attempts: attempt)
    }
}
