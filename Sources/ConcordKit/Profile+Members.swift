import ConcordModel
import ConcordTrust
import Foundation

extension Profile {
    /// Adds `name` as an active member with `role` and one device key, or adds a device key to an
    /// existing member (their role then changes to `role`). Only admins may do this. The member
    /// file is a signed commit like any record, and the allowed-signers file is regenerated.
    @discardableResult
    public func addMember(
        _ name: String, role: Role, device: String, key: SSHPublicKey, as identity: Identity
    ) throws -> WriteResult<Member> {
        do {
            try Identity.validateName(name, kind: "member")
            try Identity.validateName(device, kind: "device")
        } catch {
            throw ConcordError.invalidInput(error.localizedDescription)
        }
        let result = try write(as: identity) { transaction -> Member in
            try self.authorizeAdmin(identity)
            let existing = try self.members().first { $0.name == name }
            var keys = existing?.keys.filter { $0.device != device && $0.publicKey != key } ?? []
            keys.append(Member.Key(device: device, publicKey: key))
            let member = Member(
                name: name, role: role, status: .active, keys: keys.sorted { $0.device < $1.device },
                addedBy: existing?.addedBy ?? identity.member,
                addedAt: existing?.addedAt ?? HLClock.formatInstant(self.environment.wallClock()))
            if member != existing {
                transaction.stage(ProfilePaths.member(name), member.json.canonicalBytes(),
                                  RecordChange(kind: "members", id: name, action: existing == nil ? .added : .updated))
            }
            return member
        }
        try configureGit(members: try members())
        return result
    }

    /// Refuses `identity` unless it is an active admin.
    func authorizeAdmin(_ identity: Identity) throws {
        let member = try activeMember(identity)
        guard member.role == .admin else {
            throw ConcordError.notAllowed(member: identity.member, role: member.role, action: "changing its members",
                                          needs: .admin, profile: info.name)
        }
    }
}
