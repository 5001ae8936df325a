import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// Changing who belongs: revoking a member, changing a role, and a member adding or removing their
/// own device keys. Each is one signed commit of one member file, checked before it is made: only
/// admins revoke and change roles, anyone active changes only their own keys, and a profile always
/// keeps at least one active admin.
extension Members {
    /// Revokes `name`: status `revoked`, with who and when. Their keys leave the allowed signers,
    /// so from this commit on nothing they sign is accepted by any device. Admins only; the last
    /// active admin cannot be revoked.
    @discardableResult
    public func revoke(_ name: String, as identity: Identity) throws -> WriteResult<Member> {
        try change(name, as: identity, action: "revoking members", adminOnly: true) { member in
            guard member.status != .revoked else {
                throw ConcordError.invalidInput(.memberState, "\(name) is already revoked in \"\(profile.info.name)\"")
            }
            member.status = .revoked
            member.revokedBy = identity.member
            member.revokedAt = HLClock.formatInstant(profile.environment.wallClock())
        }
    }

    /// The acting member leaves the profile: their own member file says revoked, by themselves,
    /// with their device keys gone (any active member may; an Admin only while another active
    /// Admin stays). Their devices then end as a revoked one does.
    @discardableResult
    public func leave(as identity: Identity) throws -> WriteResult<Member> {
        try change(identity.member, as: identity, action: "leaving", adminOnly: false) { member in
            member.status = .revoked
            member.revokedBy = identity.member
            member.revokedAt = HLClock.formatInstant(profile.environment.wallClock())
            member.keys = []
        }
    }

    /// Gives `name` the role `role`. Admins only; demoting the last active admin is refused.
    @discardableResult
    public func setRole(_ name: String, to role: Role, as identity: Identity) throws -> WriteResult<Member> {
        try change(name, as: identity, action: "changing roles", adminOnly: true) { member in
            guard member.status != .revoked else {
                throw ConcordError.invalidInput(.memberState, "\(name) is revoked in \"\(profile.info.name)\": add them again to give them a role")
            }
            member.role = role
        }
    }

    /// Adds a device key to the acting member's own keys (any active member may). From format 5 on
    /// it needs `proof`, the new device's proof of possession (`KeyProof`, what `concord identity
    /// prove` prints there).
    @discardableResult
    public func addDevice(_ device: String, key: SSHPublicKey, proof: String? = nil, as identity: Identity) throws -> WriteResult<Member> {
        try validate(device: device)
        try refuseKeyHeldByAnother(key, in: try list(), except: identity.member)
        let entry = try provenKey(device: device, key: key, proof: proof, member: identity.member, as: identity, required: true)
        return try change(identity.member, as: identity, action: "adding devices", adminOnly: false) { member in
            guard !member.keys.contains(where: { $0.device == device || $0.publicKey == key }) else {
                throw ConcordError.invalidInput(.alreadyThere, "\(member.name) already has a device \(device) or that key: remove it first")
            }
            member.keys = (member.keys + [entry]).sorted { $0.device < $1.device }
        }
    }

    /// Removes one of the acting member's own device keys, named by its device label or its key's
    /// fingerprint (`SHA256:…`); their last key cannot be removed. Refused, changing nothing, when the
    /// label names more than one key, or names this device's own key: whoever holds one of the
    /// member's keys can relabel them (a stolen tablet's key renaming itself and the member's phone),
    /// so a label alone could make the member cut off their own device; the fingerprint cannot be swapped.
    @discardableResult
    public func removeDevice(_ device: String, as identity: Identity) throws -> WriteResult<Member> {
        try change(identity.member, as: identity, action: "removing devices", adminOnly: false) { member in
            let byFingerprint = device.hasPrefix("SHA256:")
            let named = member.keys.filter { byFingerprint ? $0.publicKey.fingerprint == device : $0.device == device }
            guard let key = named.first else {
                throw ConcordError.invalidInput(.memberState, "\(member.name) has no device \(device)", remedy: .listDevices)
            }
            if named.count > 1 {
                throw ConcordError.invalidInput(.memberState, "\(named.count) of \(member.name)'s keys are labelled \(device) ("
                    + named.map(\.publicKey.fingerprint).joined(separator: ", ") + ")", remedy: .removeByFingerprint)
            }
            guard member.keys.count > 1 else {
                throw ConcordError.invalidInput(.memberState, "\(device) is \(member.name)'s only device: add another before removing it")
            }
            if !byFingerprint, key.publicKey == identity.key.publicKey {
                throw ConcordError.invalidInput(.memberState, "the key labelled \(device) is this device's own (\(key.publicKey.fingerprint))",
                                                remedy: .ownDeviceLabel)
            }
            member.keys.removeAll { $0.publicKey == key.publicKey }
        }
    }

    /// The member file of `name` as `commit` has it; nil when that commit has none.
    func member(_ name: String, at commit: ObjectID) throws -> Member? {
        let path = ProfilePaths.member(name)
        let bytes: [UInt8]? = try gitCall {
            let tree = try repository.commit(commit).tree
            guard let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob else { return nil }
            return try repository.blob(entry.id)
        }
        return try bytes.map { bytes in try readDocument { try Member.decode(bytes, path: path) } }
    }

    /// Refuses with `accessRemoved` when `commit` (the remote's main) revokes `identity`'s member.
    /// Refuses with `invitationRefused` when this device joined by an open invitation whose places
    /// `commit` shows all taken by others: its acceptance lost the race and is merged nowhere.
    func checkAccess(at commit: ObjectID, for identity: Identity) throws {
        guard let member = try member(identity.member, at: commit) else { return try checkOpenAcceptance(at: commit, for: identity) }
        if member.status == .invited, let head = try gitCall({ try repository.resolveReference("HEAD") }),
           try self.member(identity.member, at: head)?.status == .active,
           try gitCall({ try repository.isAncestor(head, of: commit) }) {
            // This device's acceptance met another of the same invitation, with another key, and a merge admitted neither.
            throw ConcordError.invitationRefused(member: identity.member, reason: "it was also accepted on another device with another "
                + "key, so neither is admitted and \(identity.member) stays invited; ask \(member.addedBy) for a new invitation")
        }
        guard member.status == .revoked else { return }
        // A file with no revoker: an admission that fell with the rights of the Admin who made it (`MembershipResolution`).
        throw ConcordError.accessRemoved(member: identity.member,
                                         by: member.revokedBy ?? "the revocation or demotion, on the main line, of the Admin who admitted \(identity.member)",
                                         profile: profile.info.name)
    }

    private func checkOpenAcceptance(at commit: ObjectID, for identity: Identity) throws {
        guard let mine = try list().first(where: { $0.name == identity.member }), let id = mine.invitation else { return }
        let membership = try gitCall {
            try CommitAuthorizer.membershipWithInvitations(in: repository, tree: try repository.commit(commit).tree, caches: caches)
        }
        guard let invitation = membership.openInvitations.first(where: { $0.id == id }) else { return }
        let used = invitation.used(by: membership.members.values)
        guard used >= invitation.uses else { return }
        throw ConcordError.invitationRefused(member: identity.member, reason: "all \(invitation.uses) places of open invitation \(id) were "
            + "taken by others before this device's acceptance reached the remote, so it is not recorded; remove this copy and ask "
            + "\(invitation.invitedBy) for a new invitation")
    }

    /// Applies `mutate` to member `name` in one signed commit, after the checks every membership
    /// change passes: the actor is active (and an admin when `adminOnly`), the member exists, and
    /// at least one active admin remains.
    private func change(_ name: String, as identity: Identity, action: String, adminOnly: Bool,
                        _ mutate: (inout Member) throws -> Void) throws -> WriteResult<Member> {
        try commitMember(as: identity) {
            if adminOnly { try authorizeAdmin(identity, action: action) } else { _ = try active(identity) }
            var members = try list()
            guard let index = members.firstIndex(where: { $0.name == name }) else {
                throw ConcordError.unknownMember(member: name, profile: profile.info.name)
            }
            let before = members[index]
            try mutate(&members[index])
            guard members.contains(where: { $0.role == .admin && $0.status == .active }) else {
                throw ConcordError.lastAdmin(member: name, profile: profile.info.name)
            }
            return (members[index], members[index] == before ? nil : .updated)
        }
    }
}
