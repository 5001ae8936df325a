import ConcordModel
import ConcordTrust

/// Paths of the files Concord keeps in every profile.
package enum ProfilePaths {
    package static let profile = ".concord/profile.json"
    package static let kinds = KindsTable.path
    package static let membersDirectory = ".concord/members"
    package static let invitationsDirectory = ".concord/invitations"
    package static let gitattributes = ".gitattributes"

    package static func member(_ name: String) -> String { "\(membersDirectory)/\(name).json" }
    package static func invitation(_ id: String) -> String { "\(invitationsDirectory)/\(id).json" }
}

/// `.concord/profile.json`: what this profile is.
public struct ProfileInfo: Sendable, Equatable {
    /// The profile's id, the same on every device and remote.
    public let id: String
    /// The name it was created with.
    public let name: String
    /// The data format it is in (`concordFormatVersion` for a profile this build wrote).
    public let formatVersion: Int
    /// When it was created, ISO-8601 UTC.
    public let createdAt: String

    package init(id: String, name: String, formatVersion: Int, createdAt: String) {
        (self.id, self.name, self.formatVersion, self.createdAt) = (id, name, formatVersion, createdAt)
    }

    package var json: JSONValue {
        .object([
            "id": .string(id), "name": .string(name),
            "formatVersion": .number(String(formatVersion)), "createdAt": .string(createdAt),
        ])
    }

    package static func decode(_ bytes: [UInt8]) throws(CorruptDocument) -> ProfileInfo {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw CorruptDocument(path: ProfilePaths.profile, reason: error.description)
        }
        guard let id = value["id"]?.stringValue, let name = value["name"]?.stringValue,
              let version = value["formatVersion"]?.intValue else {
            throw CorruptDocument(path: ProfilePaths.profile, reason: "missing id, name or formatVersion")
        }
        return ProfileInfo(id: id, name: name, formatVersion: version, createdAt: value["createdAt"]?.stringValue ?? "")
    }
}

/// `.concord/members/<name>.json`: one member, their role, status and device keys, who added them,
/// and, once revoked, who revoked them and when. The revocation fields are written only when set,
/// so a member file that was never revoked keeps the bytes it always had.
public struct Member: Sendable, Equatable {
    /// One device key of the member.
    public struct Key: Sendable, Equatable {
        /// The device's name (unique within the member).
        public let device: String
        /// The device's Ed25519 public key, which signs its commits.
        public let publicKey: SSHPublicKey
        /// The key's proof of possession (`KeyProof`: base64 of an SSHSIG blob, namespace
        /// `concord-key`, by this key over the profile id, the member and the key). Nil for a key an
        /// Admin added for another member (their vouching) and for keys added before format 5.
        public var proof: String?

        /// A key of `device`, with its proof of possession when there is one.
        public init(device: String, publicKey: SSHPublicKey, proof: String? = nil) {
            self.device = device
            self.publicKey = publicKey
            self.proof = proof
        }

        package var json: JSONValue {
            var fields: [String: JSONValue] = ["device": .string(device), "publicKey": .string(publicKey.line(comment: nil))]
            if let proof { fields["proof"] = .string(proof) }
            return .object(fields)
        }
    }

    /// Whether the member is in (`active`), invited and not joined yet, or revoked.
    public enum Status: String, Sendable { case active, invited, revoked }

    /// The member's name, their file's name under `.concord/members/`.
    public let name: String
    /// What the member may do.
    public var role: Role
    /// Active, invited or revoked.
    public var status: Status
    /// The member's device keys; a commit signed by one of them is the member's.
    public var keys: [Key]
    /// The member who added them (themselves, for the profile's creator).
    public let addedBy: String
    /// When they were added, ISO-8601 UTC.
    public let addedAt: String
    /// The admin who revoked this member, and when (ISO-8601 UTC); nil unless revoked.
    public var revokedBy: String?
    /// When they were revoked, ISO-8601 UTC; nil unless revoked.
    public var revokedAt: String?
    /// When a pending invitation lapses (ISO-8601 UTC); nil once accepted, or for a member added directly.
    public var expiresAt: String?
    /// The public half of a link invitation's one-time key; nil once accepted.
    public var invitationKey: SSHPublicKey?
    /// The one-time key's SSHSIG (namespace `concord-acceptance`) binding the device key that accepted
    /// a link invitation: what lets every device check the acceptance commit.
    public var acceptance: String?
    /// The open invitation (`OpenInvitation.id`) this member joined by; nil for everyone else.
    public var invitation: String?

    package init(name: String, role: Role, status: Status, keys: [Key], addedBy: String, addedAt: String,
                 revokedBy: String? = nil, revokedAt: String? = nil, expiresAt: String? = nil, invitationKey: SSHPublicKey? = nil,
                 acceptance: String? = nil, invitation: String? = nil) {
        (self.name, self.role, self.status, self.keys, self.addedBy, self.addedAt) = (name, role, status, keys, addedBy, addedAt)
        (self.revokedBy, self.revokedAt, self.expiresAt) = (revokedBy, revokedAt, expiresAt)
        (self.invitationKey, self.acceptance, self.invitation) = (invitationKey, acceptance, invitation)
    }

    package var json: JSONValue {
        var fields: [String: JSONValue] = [
            "name": .string(name), "role": .string(role.rawValue), "status": .string(status.rawValue),
            "keys": .array(keys.map(\.json)),
            "addedBy": .string(addedBy), "addedAt": .string(addedAt),
        ]
        if let revokedBy { fields["revokedBy"] = .string(revokedBy) }
        if let revokedAt { fields["revokedAt"] = .string(revokedAt) }
        if let expiresAt { fields["expiresAt"] = .string(expiresAt) }
        if let invitationKey { fields["invitationKey"] = .string(invitationKey.line(comment: nil)) }
        if let acceptance { fields["acceptance"] = .string(acceptance) }
        if let invitation { fields["invitation"] = .string(invitation) }
        return .object(fields)
    }

    package static func decode(_ bytes: [UInt8], path: String) throws(CorruptDocument) -> Member {
        do {
            let value = try JSONValue.parse(bytes)
            guard let name = value["name"]?.stringValue,
                  let role = value["role"]?.stringValue.flatMap(Role.init(parsing:)),
                  let status = value["status"]?.stringValue.flatMap(Status.init(rawValue:)) else {
                throw CorruptDocument(path: path, reason: "missing name, role or status")
            }
            var keys = [Key]()
            for key in value["keys"]?.arrayValue ?? [] {
                guard let device = key["device"]?.stringValue, let line = key["publicKey"]?.stringValue else { continue }
                keys.append(Key(device: device, publicKey: try SSHPublicKey(line: line), proof: key["proof"]?.stringValue))
            }
            return Member(name: name, role: role, status: status, keys: keys,
                          addedBy: value["addedBy"]?.stringValue ?? "", addedAt: value["addedAt"]?.stringValue ?? "",
                          revokedBy: value["revokedBy"]?.stringValue, revokedAt: value["revokedAt"]?.stringValue,
                          expiresAt: value["expiresAt"]?.stringValue,
                          invitationKey: try value["invitationKey"]?.stringValue.map { try SSHPublicKey(line: $0) },
                          acceptance: value["acceptance"]?.stringValue, invitation: value["invitation"]?.stringValue)
        } catch let error as CorruptDocument {
            throw error
        } catch {
            throw CorruptDocument(path: path, reason: "\(error)")
        }
    }
}

/// A profile document (`.concord/profile.json`, a member file, an open invitation) that does not
/// read: which one, and why. ConcordKit reports it as `ConcordError.corruptRecord`.
package struct CorruptDocument: Error, Sendable, Equatable, CustomStringConvertible {
    /// The document's path in the profile.
    package let path: String
    /// What is wrong with it.
    package let reason: String

    package init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    package var description: String { "\(path) is corrupt: \(reason)" }
}
