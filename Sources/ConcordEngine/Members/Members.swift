import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// Who belongs to a profile and what each may do: the member files under `.concord/members/`,
/// their roles and device keys, and the checks every write passes. Membership changes (adding a
/// member or a device, and later inviting, accepting and revoking) live here.
package struct Members {
    let profile: Profile
    let repository: Repository
    var caches: EngineCaches { profile.caches }

    /// The members of this profile, read from `.concord/members/`.
    public func list() throws -> [Member] {
        let directory = profile.root.appendingPathComponent(ProfilePaths.membersDirectory)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return try names.filter { $0.hasSuffix(".json") }.sorted().map { name in
            let path = ProfilePaths.membersDirectory + "/" + name
            let bytes = try Array(Data(contentsOf: directory.appendingPathComponent(name)))
            return try readDocument { try Member.decode(bytes, path: path) }
        }
    }

    /// Adds `name` as an active member with `role` and one device key, or adds a device key to an
    /// existing member (their role then changes to `role`). Only admins may do this. The member
    /// file is a signed commit like any record, and the allowed-signers file is regenerated.
    ///
    /// A key for ANOTHER member is written without a proof unless `proof` is given: the Admin vouches
    /// for it (docs/security.md). A key for the Admin's own file needs its holder's proof
    /// (`KeyProof`): made here when it is this device's key, else `proof` (from format 5 on).
    @discardableResult
    public func add(
        _ name: String, role: Role, device: String, key: SSHPublicKey, proof: String? = nil, as identity: Identity
    ) throws -> WriteResult<Member> {
        try validate(member: name, device: device)
        return try commitMember(as: identity) {
            try authorizeAdmin(identity)
            let members = try list()
            try refuseKeyHeldByAnother(key, in: members, except: name)
            try refuseNameTakenInAnotherCase(name, in: members)
            let existing = members.first { $0.name == name }
            // A key the member already holds keeps its proof (a new device name for it asks for none).
            let known = existing?.keys.first { $0.publicKey == key }?.proof
            let entry = try provenKey(device: device, key: key, proof: proof ?? known, member: name, as: identity,
                                      required: name == identity.member)
            var keys = existing?.keys.filter { $0.device != device && $0.publicKey != key } ?? []
            keys.append(entry)
            let member = Member(
                name: name, role: role, status: .active, keys: keys.sorted { $0.device < $1.device },
                addedBy: existing?.addedBy ?? identity.member,
                addedAt: existing?.addedAt ?? HLClock.formatInstant(profile.environment.wallClock()))
            return (member, member == existing ? nil : existing == nil ? .added : .updated)
        }
    }

    /// One signed commit of one member file: `body` (run inside the write, against the branch tip)
    /// gives the member as they should be and what happened to them (nil: nothing changed, so
    /// nothing is committed). The allowed-signers file is regenerated afterwards.
    func commitMember(as identity: Identity, _ body: () throws -> (member: Member, action: ChangeAction?)) throws -> WriteResult<Member> {
        let result = try profile.records.write(as: identity, asOwner: true) { transaction -> Member in
            let (member, action) = try body()
            if let action {
                transaction.stage(ProfilePaths.member(member.name), member.json.canonicalBytes(),
                                  RecordChange(kind: "members", id: member.name, action: action))
            }
            return member
        }
        try profile.configureGit(members: try list())
        return result
    }

    /// Refuses a member or device name that is not allowed, as invalid input.
    func validate(member: String? = nil, device: String? = nil) throws {
        do {
            if let member { try Identity.validateName(member, kind: "member") }
            if let device { try Identity.validateName(device, kind: "device") }
        } catch {
            throw ConcordError.invalidInput(.badName, error.localizedDescription)
        }
    }

    /// The key entry `key` of `member`'s device `device` gets: with `proof` once it is checked, or
    /// with a proof this device signs when `key` is its own. Without either it is refused when
    /// `required` (the member's own file) and the profile is of format 5 or later, and written
    /// without a proof otherwise (an Admin's vouching for another member's key).
    func provenKey(device: String, key: SSHPublicKey, proof: String?, member: String, as identity: Identity,
                   required: Bool) throws -> Member.Key {
        guard let proof else {
            let entry = KeyProof.key(device: device, key, member: member, profileID: profile.info.id, signedBy: identity)
            if entry.proof == nil, required, profile.info.formatVersion >= KeyProof.firstFormat {
                throw ConcordError.invalidInput(.keyProof, "a key added to your own member file needs its proof of possession",
                                                remedy: .proveKey(profileID: profile.info.id, member: member, device: device))
            }
            return entry
        }
        if let problem = KeyProof.problem(proof, profileID: profile.info.id, member: member, key: key) {
            throw ConcordError.invalidInput(.keyProof, "that key's proof is not valid: \(problem)",
                                            remedy: .proveKey(profileID: profile.info.id, member: member, device: device))
        }
        return Member.Key(device: device, publicKey: key, proof: proof)
    }

    /// Refuses `name` when a member of `members` has it in another case (`Zed` beside `zed`): a name
    /// is one member whatever its case (`CommitRule.nameTakenInAnotherCase`).
    func refuseNameTakenInAnotherCase(_ name: String, in members: [Member]) throws {
        if let other = members.first(where: { $0.name != name && $0.name.lowercased() == name.lowercased() }) {
            throw ConcordError.invalidInput(.alreadyThere, "\"\(profile.info.name)\" already has a member named \(other.name), which differs from \(name) "
                                            + "only in case: a name is one member whatever its case; choose another name")
        }
    }

    /// Refuses `key` when a member of `members` other than `name` (any member when nil) holds it:
    /// a key belongs to one member.
    func refuseKeyHeldByAnother(_ key: SSHPublicKey, in members: [Member], except name: String? = nil) throws {
        if let owner = members.first(where: { $0.name != name && $0.keys.contains { $0.publicKey == key } }) {
            throw ConcordError.invalidInput(.alreadyThere, "that key is already \(owner.name)'s in \"\(profile.info.name)\": a key belongs to one member")
        }
    }

    /// Refuses `identity` unless it is an active member whose role may write `kind`.
    func authorize(_ identity: Identity, toWrite kind: RecordKind) throws {
        let member = try active(identity)
        guard member.role >= kind.writers else {
            throw ConcordError.notAllowed(member: identity.member, role: member.role, action: "writing \(kind.name)",
                                          needs: kind.writers, profile: profile.info.name, actingOn: identity.actingOn)
        }
    }

    /// The active member `identity` is, checked by name AND device key: a key the member never
    /// registered (someone else's identity under the same name, or a device not yet added) is refused.
    /// For a member acting on another's device (`concord switch`), both must be active, and the
    /// member returned has the lower of their two roles (the validity rule judges such commits so).
    package func active(_ identity: Identity) throws -> Member {
        let members = try list()
        guard let owner = members.first(where: { $0.name == identity.owner }), owner.status == .active else {
            throw ConcordError.notAMember(member: identity.owner, profile: profile.info.name)
        }
        guard owner.keys.contains(where: { $0.publicKey == identity.key.publicKey }) else {
            throw ConcordError.keyNotRegistered(member: identity.owner, fingerprint: identity.key.publicKey.fingerprint, profile: profile.info.name)
        }
        guard identity.member != identity.owner else { return owner }
        guard var acting = members.first(where: { $0.name == identity.member }), acting.status == .active else {
            throw ConcordError.invalidInput(.memberState, "\(identity.member), who acts on this device, is not an active member of "
                                            + "\"\(profile.info.name)\"", remedy: .switchActing(owner: identity.owner))
        }
        acting.role = min(acting.role, owner.role)
        return acting
    }

    /// The active admin `identity` is; refused otherwise, naming `action`.
    @discardableResult
    func authorizeAdmin(_ identity: Identity, action: String = "changing its members") throws -> Member {
        let member = try active(identity)
        guard member.role == .admin else {
            throw ConcordError.notAllowed(member: identity.member, role: member.role, action: action,
                                          needs: .admin, profile: profile.info.name, actingOn: identity.actingOn)
        }
        return member
    }
}

private extension Identity {
    /// The device's owner when another member acts on it (`concord switch`), else nil.
    var actingOn: String? { member == owner ? nil : owner }
}
