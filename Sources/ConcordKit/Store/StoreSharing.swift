import ConcordModel
import ConcordTrust
import Foundation

/// Sharing through the store: `Members`' membership calls, made as the store's identity, blocking
/// and `async` (each a signed commit, like a write; none pushes: `sync` does).
///
/// Three ways to invite: by name with the invitee's key (`share(_:role:key:…)`, only that key can
/// accept), by name with a link (`shareLink`, whoever holds the text accepts it once), and open
/// (`shareOpen`, up to `uses` people join under their own names). Each returns the invitation
/// (`Invitation`, whose `text` is what the app shows or sends); the invitee accepts it with
/// `ConcordStore.accept`. Every refusal is a `ConcordError` an app can switch on: a member whose
/// role does not allow the call gets `.notAllowed(member:role:action:needs:profile:actingOn:)`,
/// an invitation that is used, expired, withdrawn or altered `.invitationRefused(member:reason:)`.
extension ConcordStore {
    /// Invites `name` as `role` through `remote`'s URL (`Members.share`); admins only. With `key`,
    /// only that key can accept; without, it is a link invitation (`shareLink`).
    public func share(_ name: String, role: Role, key: SSHPublicKey? = nil, device: String? = nil, expiresIn: Int64,
                      remote: String = "origin") throws -> SharedInvitation {
        let identity = identity
        return try withProfile { try $0.members.share(name, role: role, key: key, device: device, expiresIn: expiresIn,
                                                      remote: remote, as: identity) }
    }

    /// `share`, run on the store's queue while the caller suspends.
    public func share(_ name: String, role: Role, key: SSHPublicKey? = nil, device: String? = nil, expiresIn: Int64,
                      remote: String = "origin") async throws -> SharedInvitation {
        let identity = identity
        return try await withProfile { try $0.members.share(name, role: role, key: key, device: device, expiresIn: expiresIn,
                                                            remote: remote, as: identity) }
    }

    /// An invitation anyone holding it may accept, up to `uses` times (`Members.shareOpen`).
    public func shareOpen(role: Role, uses: Int, expiresIn: Int64, remote: String = "origin") throws -> SharedOpenInvitation {
        let identity = identity
        return try withProfile { try $0.members.shareOpen(role: role, uses: uses, expiresIn: expiresIn, remote: remote, as: identity) }
    }

    /// `shareOpen`, run on the store's queue while the caller suspends.
    public func shareOpen(role: Role, uses: Int, expiresIn: Int64, remote: String = "origin") async throws -> SharedOpenInvitation {
        let identity = identity
        return try await withProfile {
            try $0.members.shareOpen(role: role, uses: uses, expiresIn: expiresIn, remote: remote, as: identity)
        }
    }

    /// Adds `name` as an active member with one device key (`Members.add`); admins only.
    @discardableResult
    public func addMember(_ name: String, role: Role, device: String, key: SSHPublicKey, proof: String? = nil) throws -> WriteResult<Member> {
        let identity = identity
        return try withProfile { try $0.members.add(name, role: role, device: device, key: key, proof: proof, as: identity) }
    }

    /// `addMember`, run on the store's queue while the caller suspends.
    @discardableResult
    public func addMember(_ name: String, role: Role, device: String, key: SSHPublicKey,
                          proof: String? = nil) async throws -> WriteResult<Member> {
        let identity = identity
        return try await withProfile { try $0.members.add(name, role: role, device: device, key: key, proof: proof, as: identity) }
    }

    /// Revokes `name` (`Members.revoke`); admins only.
    @discardableResult
    public func revoke(_ name: String) throws -> WriteResult<Member> {
        let identity = identity
        return try withProfile { try $0.members.revoke(name, as: identity) }
    }

    /// `revoke`, run on the store's queue while the caller suspends.
    @discardableResult
    public func revoke(_ name: String) async throws -> WriteResult<Member> {
        let identity = identity
        return try await withProfile { try $0.members.revoke(name, as: identity) }
    }

    /// Gives `name` the role `role` (`Members.setRole`); admins only.
    @discardableResult
    public func setRole(_ name: String, to role: Role) throws -> WriteResult<Member> {
        let identity = identity
        return try withProfile { try $0.members.setRole(name, to: role, as: identity) }
    }

    /// `setRole`, run on the store's queue while the caller suspends.
    @discardableResult
    public func setRole(_ name: String, to role: Role) async throws -> WriteResult<Member> {
        let identity = identity
        return try await withProfile { try $0.members.setRole(name, to: role, as: identity) }
    }

    /// The store's identity leaves the profile (`Members.leave`).
    @discardableResult
    public func leave() throws -> WriteResult<Member> {
        let identity = identity
        return try withProfile { try $0.members.leave(as: identity) }
    }

    /// `leave`, run on the store's queue while the caller suspends.
    @discardableResult
    public func leave() async throws -> WriteResult<Member> {
        let identity = identity
        return try await withProfile { try $0.members.leave(as: identity) }
    }

    /// Invites `name` as `role` by a link: the invitation carries a one-time key, so whoever holds
    /// its text can accept it, once, before it expires (send it privately). Admins only.
    public func shareLink(_ name: String, role: Role, expiresIn: Int64, remote: String = "origin") throws -> SharedInvitation {
        try share(name, role: role, key: nil, device: nil, expiresIn: expiresIn, remote: remote)
    }

    /// `shareLink`, run on the store's queue while the caller suspends.
    public func shareLink(_ name: String, role: Role, expiresIn: Int64, remote: String = "origin") async throws -> SharedInvitation {
        try await share(name, role: role, key: nil, device: nil, expiresIn: expiresIn, remote: remote)
    }

    /// The profile's open invitations, each with how many people joined by it (`Members.openInvitations`).
    public func openInvitations() throws -> [OpenInvitationUse] {
        try withProfile { try $0.members.openInvitations().map { OpenInvitationUse(invitation: $0.invitation, used: $0.used) } }
    }

    /// `openInvitations`, run on the store's queue while the caller suspends.
    public func openInvitations() async throws -> [OpenInvitationUse] {
        try await withProfile { try $0.members.openInvitations().map { OpenInvitationUse(invitation: $0.invitation, used: $0.used) } }
    }

    /// Deletes the profile everywhere (`Sync.destroy`): signs a deletion notice (the store's identity
    /// must be an active Admin, else `.notAllowed`), deletes every remote's repository, then this
    /// device's copy. Before the copy goes, the store ends (every later call throws
    /// `profileDeleted`, observers and feeds end with it, a bound sync engine stops), unless a
    /// remote failed (`DestroyReport.failed`): the copy and the store then stay, and calling it
    /// again finishes the job. Runs on the store's sync queue, so no sync runs meanwhile.
    public func destroy(forget: Bool = false) throws -> DestroyReport {
        let identity = identity
        return try onSyncQueueAsCaller { profile in
            try profile.sync.destroy(as: identity, forget: forget, beforeRemovingCopy: { self.removingHere(by: Self.deleted($0)) })
        }
    }

    /// `destroy`, run on the store's sync queue while the caller suspends.
    public func destroy(forget: Bool = false) async throws -> DestroyReport {
        let identity = identity
        return try await onSyncQueueAsCaller { profile in
            try profile.sync.destroy(as: identity, forget: forget, beforeRemovingCopy: { self.removingHere(by: Self.deleted($0)) })
        }
    }

    /// What every call of a store whose profile `notice` deleted throws.
    private static func deleted(_ notice: DeletionNotice) -> ConcordError {
        .profileDeleted(profile: notice.profileName, by: notice.deletedBy, at: notice.deletedAt)
    }
}

/// An open invitation and how many people joined by it, as `ConcordStore.openInvitations` returns it.
public struct OpenInvitationUse: Sendable {
    /// The invitation file committed by `shareOpen`.
    public let invitation: OpenInvitation
    /// How many members joined by it so far (at most `invitation.uses`).
    public let used: Int
}
