import ConcordModel
import ConcordTrust
import Foundation

/// The data format this build writes and the newest it reads.
///
/// History: 1 — first format (records, tombstones, JSON Lines logs, members, kinds), each record
/// kind one flat directory. 2 — record files in 256 bucket directories per kind (`RecordPaths`),
/// so a one-record change no longer rewrites a tree of every record of its kind. 3 — per-field
/// stamps: a live record's `fields` and `lastDeleted` (see `Record`), so `lww` merges each field by
/// its own last write and the result no longer depends on the order devices sync in. 4 — open
/// invitations (`.concord/invitations/<id>.json`, `OpenInvitation`) and the member field
/// `invitation`; the first open invitation of a format 3 profile moves its `profile.json` to 4 in the
/// same commit. A concord that reads only format 3 refuses that commit (a path its format lacks)
/// rather than misreading it, and a fetched `profile.json` of a newer format than this build reads
/// is refused with "upgrade concord". 5 — key proofs in member files (`Member.Key.proof`, `KeyProof`)
/// and the validity rule of this build: merges judged by the recomputed policy merge, membership
/// resolved (docs/security.md). Keys added in a commit whose parent is format 5 need their holder's
/// proof unless an active Admin adds them to another member's file; `concord upgrade` moves a
/// format 4 profile to 5 in one signed commit. 6 — a log entry imported from a dump may carry
/// `origin` (`LogEntry.origin`, `LogImport`): when, by whom and on which device it was first written,
/// while its `by` stays the importing signer. A format 5 profile is a format 6 one with no origins;
/// an Admin's import of such entries moves it to 6 in the same commit (`concord upgrade` does too),
/// so a concord that reads only format 5 refuses that commit with "upgrade concord" rather than
/// failing on a field it does not know, and an origin in a profile of an older format is refused.
public let concordFormatVersion = 6
/// The oldest format this build reads. A format 2 record has no field stamps, and reading one as
/// format 3 would say all its fields were written at its `updatedAt`: not what happened. A format 3
/// profile is a format 4 profile with no open invitations, a format 4 profile a format 5 one with no
/// key proofs, and a format 5 profile a format 6 one with no log entry origins, so all are read as they are.
public let oldestReadableFormatVersion = 3

/// Paths of the files Concord keeps in every profile.
package enum ProfilePaths {
    package static let profile = ".concord/profile.json"
    static let kinds = KindsTable.path
    package static let membersDirectory = ".concord/members"
    package static let invitationsDirectory = ".concord/invitations"
    static let gitattributes = ".gitattributes"

    package static func member(_ name: String) -> String { "\(membersDirectory)/\(name).json" }
    static func invitation(_ id: String) -> String { "\(invitationsDirectory)/\(id).json" }
}

/// `.concord/profile.json`: what this profile is.
public struct ProfileInfo: Sendable, Equatable {
    public let id: String
    public let name: String
    public let formatVersion: Int
    public let createdAt: String

    var json: JSONValue {
        .object([
            "id": .string(id), "name": .string(name),
            "formatVersion": .number(String(formatVersion)), "createdAt": .string(createdAt),
        ])
    }

    package static func decode(_ bytes: [UInt8]) throws -> ProfileInfo {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw ConcordError.corruptRecord(path: ProfilePaths.profile, reason: error.description)
        }
        guard let id = value["id"]?.stringValue, let name = value["name"]?.stringValue,
              let version = value["formatVersion"]?.intValue else {
            throw ConcordError.corruptRecord(path: ProfilePaths.profile, reason: "missing id, name or formatVersion")
        }
        return ProfileInfo(id: id, name: name, formatVersion: version, createdAt: value["createdAt"]?.stringValue ?? "")
    }
}

/// `.concord/members/<name>.json`: one member, their role, status and device keys, who added them,
/// and, once revoked, who revoked them and when. The revocation fields are written only when set,
/// so a member file that was never revoked keeps the bytes it always had.
public struct Member: Sendable, Equatable {
    public struct Key: Sendable, Equatable {
        public let device: String
        public let publicKey: SSHPublicKey
        /// The key's proof of possession (`KeyProof`: base64 of an SSHSIG blob, namespace
        /// `concord-key`, by this key over the profile id, the member and the key). Nil for a key an
        /// Admin added for another member (their vouching) and for keys added before format 5.
        public var proof: String?

        public init(device: String, publicKey: SSHPublicKey, proof: String? = nil) {
            self.device = device
            self.publicKey = publicKey
            self.proof = proof
        }

        var json: JSONValue {
            var fields: [String: JSONValue] = ["device": .string(device), "publicKey": .string(publicKey.line(comment: nil))]
            if let proof { fields["proof"] = .string(proof) }
            return .object(fields)
        }
    }

    public enum Status: String, Sendable { case active, invited, revoked }

    public let name: String
    public var role: Role
    public var status: Status
    public var keys: [Key]
    public let addedBy: String
    public let addedAt: String
    /// The admin who revoked this member, and when (ISO-8601 UTC); nil unless revoked.
    public var revokedBy: String?
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

    package static func decode(_ bytes: [UInt8], path: String) throws -> Member {
        do {
            let value = try JSONValue.parse(bytes)
            guard let name = value["name"]?.stringValue,
                  let role = value["role"]?.stringValue.flatMap(Role.init(parsing:)),
                  let status = value["status"]?.stringValue.flatMap(Status.init(rawValue:)) else {
                throw ConcordError.corruptRecord(path: path, reason: "missing name, role or status")
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
        } catch let error as ConcordError {
            throw error
        } catch {
            throw ConcordError.corruptRecord(path: path, reason: "\(error)")
        }
    }
}
