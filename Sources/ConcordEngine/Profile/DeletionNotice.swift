import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// What is left where a profile was deleted (`concord destroy`): a path remote's directory holds
/// only this file (`concord-deleted.json`), a concord server keeps it beside the deleted
/// repository's name and hands it out (`concord-notice`). Signed by the deleting Admin's device
/// key, so every other device decides from its own copy of the membership, never on a remote's
/// word, whether to remove its copy: the signing key must be a device key of a member who is an
/// active Admin in the profile's history this device holds, and the profile id and root commit
/// must be this profile's.
///
/// Canonical JSON: `formatVersion`, `profile` (id), `profileName`, `root` (root commit, hex),
/// `deletedBy` (member), `device`, `deletedAt` (ISO-8601 UTC), `key` (the signing public key),
/// `signature` (SSHSIG, namespace `concord-deletion`, over the canonical JSON of the other fields).
public struct DeletionNotice: Sendable, Equatable {
    /// Format history: 1 — the fields above.
    static let formatVersion = 1
    static let namespace = "concord-deletion"
    /// The file a path remote's directory keeps once its repository is deleted.
    public static let fileName = "concord-deleted.json"
    /// The largest notice read (one is well under 2 KiB).
    public static let maxBytes = 16 * 1024

    /// The deleted profile's id.
    public let profileID: String
    /// Its name, for the people told.
    public let profileName: String
    /// Its root commit (hex): a notice for another history is not this profile's.
    public let root: String
    /// The Admin who deleted it.
    public let deletedBy: String
    /// The device it was deleted from.
    public let device: String
    /// When, ISO-8601 UTC.
    public let deletedAt: String
    /// The key that signed the notice (an active Admin's device key).
    public let key: SSHPublicKey
    let signature: String

    private static func fields(profileID: String, profileName: String, root: String, deletedBy: String, device: String,
                               deletedAt: String, key: SSHPublicKey) -> [String: JSONValue] {
        ["formatVersion": .number(String(formatVersion)), "profile": .string(profileID), "profileName": .string(profileName),
         "root": .string(root), "deletedBy": .string(deletedBy), "device": .string(device), "deletedAt": .string(deletedAt),
         "key": .string(key.line(comment: nil))]
    }

    private var signedFields: [String: JSONValue] {
        Self.fields(profileID: profileID, profileName: profileName, root: root, deletedBy: deletedBy, device: device,
                    deletedAt: deletedAt, key: key)
    }

    /// The notice's file bytes.
    public var bytes: [UInt8] {
        var fields = signedFields
        fields["signature"] = .string(signature)
        return JSONValue.object(fields).canonicalBytes()
    }

    /// A notice signed by `identity`'s device key.
    static func sign(profileID: String, profileName: String, root: ObjectID, identity: Identity, at time: Int64) -> DeletionNotice {
        let deletedAt = HLClock.formatInstant(time)
        let fields = fields(profileID: profileID, profileName: profileName, root: root.hex, deletedBy: identity.owner,
                            device: identity.device, deletedAt: deletedAt, key: identity.key.publicKey)
        let signature = SSHSignature.sign(JSONValue.object(fields).canonicalBytes(), with: identity.key, namespace: namespace)
        return DeletionNotice(profileID: profileID, profileName: profileName, root: root.hex, deletedBy: identity.owner,
                              device: identity.device, deletedAt: deletedAt, key: identity.key.publicKey, signature: signature)
    }

    private init(profileID: String, profileName: String, root: String, deletedBy: String, device: String, deletedAt: String,
                 key: SSHPublicKey, signature: String) {
        (self.profileID, self.profileName, self.root, self.deletedBy) = (profileID, profileName, root, deletedBy)
        (self.device, self.deletedAt, self.key, self.signature) = (device, deletedAt, key, signature)
    }

    /// Parses a notice read from `source` (a remote: hostile) and checks its signature against the
    /// key it names; who that key belongs to is `problem(profileID:root:membership:)`'s question.
    package init(bytes: [UInt8], source: String) throws {
        func bad(_ why: String) -> ConcordError { .invalidInput(.badDeletionNotice, "the deletion notice at \(source) is not valid (\(why)); nothing here changed") }
        guard bytes.count <= Self.maxBytes else { throw bad("over \(Self.maxBytes) bytes") }
        guard let value = try? JSONValue.parse(bytes), let version = value["formatVersion"]?.intValue else { throw bad("not a notice") }
        guard version == Self.formatVersion else {
            throw version > Self.formatVersion ? ConcordError.newerFormat(found: version, supported: Self.formatVersion) : bad("format \(version)")
        }
        guard let profileID = value["profile"]?.stringValue, let profileName = value["profileName"]?.stringValue,
              let root = value["root"]?.stringValue, let deletedBy = value["deletedBy"]?.stringValue,
              let device = value["device"]?.stringValue, let deletedAt = value["deletedAt"]?.stringValue,
              HLClock.parseInstant(deletedAt) != nil, let keyLine = value["key"]?.stringValue,
              let key = try? SSHPublicKey(line: keyLine), let signature = value["signature"]?.stringValue else {
            throw bad("a field is missing or malformed")
        }
        self.init(profileID: profileID, profileName: profileName, root: root, deletedBy: deletedBy, device: device,
                  deletedAt: deletedAt, key: key, signature: signature)
        let signer: SSHPublicKey
        do { signer = try SSHSignature.verify(signature, message: JSONValue.object(signedFields).canonicalBytes(), namespace: Self.namespace) } catch {
            throw bad("bad signature: \(error.localizedDescription)")
        }
        guard signer == key else { throw bad("signed by another key than the one it names") }
    }

    /// Why this notice does not delete the profile `profileID` whose history starts at `root` and
    /// whose membership is `membership`, or nil when it does: the profile and root must match, and
    /// the signing key must be a device key of `deletedBy`, an active Admin there.
    package func problem(profileID: String, root: ObjectID, membership: Membership) -> String? {
        guard self.profileID == profileID, self.root == root.hex else {
            return "it is for another profile (\(profileName), \(self.profileID))"
        }
        let holders = membership.holders(of: key).filter { $0.member.name == deletedBy }
        guard let holder = holders.first else {
            return "its key is not one of \(deletedBy)'s device keys in the membership this device has (sync from a member who has it first)"
        }
        guard holder.member.status == .active, holder.member.role == .admin else {
            return "\(deletedBy) is not an active Admin in the membership this device has"
        }
        return nil
    }

    /// The error a device ends its sync with once it has accepted this notice.
    var deleted: ConcordError {
        .profileDeleted(profile: profileName, by: "\(deletedBy)@\(device)", at: deletedAt)
    }
}
