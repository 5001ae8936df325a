import ConcordRules
import ConcordTrust
import Foundation

/// What an app needs of this device beside records and sharing, on the store: who acts on a shared
/// device, trusting a server's host key, adding this person's own new device.
extension ConcordStore {
    /// Makes `member` the one acting on this device for this profile (the store's identity: back
    /// to the owner), as `concord switch` does: the records and log entries this store writes
    /// afterwards name `member` (`Concord-Actor`, `updatedBy`, `by`), the device key still signs,
    /// and the rule judges them by the lower of the two roles. Both must be active members
    /// (`notAMember`, `invalidInput` otherwise, nothing changed). Kept on this device alone; no
    /// record of any kind is written (an app's log kinds keep the app's own shape).
    public func switchActing(to member: String) throws {
        let identity = identity
        _ = try withProfile { try $0.members.switchActing(to: member, as: identity, logged: false) }
    }

    /// `switchActing`, run on the store's queue while the caller suspends.
    public func switchActing(to member: String) async throws {
        let identity = identity
        _ = try await withProfile { try $0.members.switchActing(to: member, as: identity, logged: false) }
    }

    /// The member acting on this device for this profile, or nil when it is the store's identity.
    public func actingMember() throws -> String? {
        try withProfile { $0.members.actingMember() }
    }

    /// Trusts the host key of ssh remote `remote`'s server when its fingerprint is `fingerprint`
    /// (`SHA256:…`, as `ssh-keygen -lf` prints it: get it from the server's admin, or from an
    /// invitation you trust): recorded in `$CONCORD_HOME/known_hosts`, so syncs reach that server
    /// and no other. A server presenting another key is refused (`hostKeyMismatch`), nothing recorded.
    public func trustHost(remote: String = "origin", fingerprint: String) throws {
        let identity = identity
        _ = try withProfile { try $0.sync.trustRemote(remote, identity: identity, fingerprint: fingerprint) }
    }

    /// `trustHost`, run on the store's queue while the caller suspends.
    public func trustHost(remote: String = "origin", fingerprint: String) async throws {
        let identity = identity
        _ = try await withProfile { try $0.sync.trustRemote(remote, identity: identity, fingerprint: fingerprint) }
    }

    /// Adds a new device of the store's own member, whatever their role (`Members.addDevice`): `key`
    /// is the new device's public key and `proof` its proof of holding it for this profile and
    /// member (what `Identity.keyProof` makes on that device, or `concord identity prove` prints).
    /// One signed commit; the new device then clones the profile and opens it as itself.
    @discardableResult
    public func addDevice(_ device: String, key: SSHPublicKey, proof: String) throws -> WriteResult<Member> {
        let identity = identity
        return try withProfile { try $0.members.addDevice(device, key: key, proof: proof, as: identity.acting(as: identity.owner)) }
    }

    /// `addDevice`, run on the store's queue while the caller suspends.
    @discardableResult
    public func addDevice(_ device: String, key: SSHPublicKey, proof: String) async throws -> WriteResult<Member> {
        let identity = identity
        return try await withProfile { try $0.members.addDevice(device, key: key, proof: proof, as: identity.acting(as: identity.owner)) }
    }
}

extension Identity {
    /// This device's proof of holding its key, for member `member` (this identity's own member when
    /// nil) of the profile whose id is `profileID` (`ProfileInfo.id`): what an existing device of
    /// the member passes to `ConcordStore.addDevice(_:key:proof:)`, with this device's public key.
    /// Worth nothing for another profile or member.
    public func keyProof(profileID: String, member: String? = nil) -> String {
        KeyProof.sign(profileID: profileID, member: member ?? owner, with: key)
    }
}
