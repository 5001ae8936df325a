import ConcordModel
import ConcordTrust
import Foundation

/// Sharing through the store: `Members`' membership calls, made as the store's identity, blocking
/// and `async` (each a signed commit, like a write; none pushes: `sync` does).
extension ConcordStore {
    /// Invites `name` as `role` through `remote`'s URL (`Members.share`); admins only.
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
}
