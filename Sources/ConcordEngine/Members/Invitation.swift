import ConcordModel
import ConcordTrust
import Foundation

/// What an admin sends an invitee by any channel (a message, an email): where the profile is, which
/// history it has (its root commit, the trust anchor), who is invited as what and until when, and,
/// for a link invitation, the one-time private key whose public half the member file holds. Signed
/// by the inviting admin's device key, so an invitation cannot be altered on the way.
///
/// Text form: `concord-invitation-1:` + base64url (no padding) of the canonical JSON of the fields.
public struct Invitation: Sendable, Equatable {
    /// What every invitation's text starts with (the text form's version 1).
    public static let prefix = "concord-invitation-1:"
    /// The SSHSIG namespace of the admin's signature over an invitation.
    static let namespace = "concord-invitation"

    /// The remote to clone the profile from (a path or an `ssh://` URL).
    public let url: String
    /// The profile's id (`ProfileInfo.id`).
    public let profileID: String
    /// The profile's name, for the invitee to see before accepting.
    public let profileName: String
    /// The profile's root commit id (hex): a remote whose history does not start there is refused.
    public let root: String
    /// The invitee's member name; empty for an open invitation (each joiner chooses theirs).
    public let member: String
    /// An open invitation's id (`OpenInvitation`), and how many may join by it; nil for a named one.
    public let open: String?
    /// How many people may join by an open invitation; nil for a named one.
    public let uses: Int?
    /// The role the invitee gets on accepting.
    public let role: Role
    /// When the invitation lapses, ISO-8601 UTC.
    public let expiresAt: String
    /// The member name of the admin who signed it.
    public let invitedBy: String
    /// The one-time private key (OpenSSH private key file text) of a link invitation; nil when the
    /// invitee's key was given.
    public let oneTimeKey: String?
    /// The inviting admin's SSHSIG (namespace `concord-invitation`) over the other fields.
    public internal(set) var signature: String

    /// How an invitation admits: what an app shows next to it ("only Bob's device", "anyone with
    /// this link, once", "up to 10 people").
    public enum Form: Sendable, Equatable {
        /// For one member's given key (`share` with a key): only that key can accept it.
        case named
        /// For one member, by a one-time key in the text (`shareLink`): whoever holds it accepts it once.
        case link
        /// For anyone holding it, each under their own name, up to `uses` people (`shareOpen`).
        case open(id: String, uses: Int)
    }

    /// Which of the three kinds of invitation this is.
    public var form: Form {
        if let open { return .open(id: open, uses: uses ?? 0) }
        return oneTimeKey == nil ? .named : .link
    }

    /// The fields the signature covers, as canonical JSON.
    var signedBytes: [UInt8] {
        var fields: [String: JSONValue] = [
            "url": .string(url), "profile": .string(profileID), "profileName": .string(profileName), "root": .string(root),
            "member": .string(member), "role": .string(role.rawValue), "expiresAt": .string(expiresAt), "invitedBy": .string(invitedBy),
        ]
        if let oneTimeKey { fields["oneTimeKey"] = .string(oneTimeKey) }
        if let open { fields["open"] = .string(open) }
        if let uses { fields["uses"] = .number(String(uses)) }
        return JSONValue.object(fields).canonicalBytes()
    }

    /// Whether the invitation has lapsed at `now` (milliseconds since 1970).
    func hasExpired(at now: Int64) -> Bool {
        guard let expires = HLClock.parseInstant(expiresAt) else { return true }
        return now >= expires
    }

    /// The text to send.
    public var text: String {
        var object = (try? JSONValue.parse(signedBytes))?.objectValue ?? [:]
        object["signature"] = .string(signature)
        let base64 = Data(JSONValue.object(object).canonicalBytes()).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return Self.prefix + base64
    }

    /// Parses an invitation's text; the signature is checked against the profile's members later
    /// (`Members.accept`), once the history it names is here.
    public init(text: String) throws {
        let bad = ConcordError.invalidInput(.badInvitation, "that is not a Concord invitation (it should start with \(Self.prefix)): ask for it again")
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(Self.prefix), trimmed.utf8.count < 64 * 1024 else { throw bad }
        var base64 = String(trimmed.dropFirst(Self.prefix.count))
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let value = try? JSONValue.parse(Array(data)),
              let url = value["url"]?.stringValue, let profileID = value["profile"]?.stringValue,
              let profileName = value["profileName"]?.stringValue, let root = value["root"]?.stringValue,
              let member = value["member"]?.stringValue, let role = value["role"]?.stringValue.flatMap(Role.init(parsing:)),
              let expiresAt = value["expiresAt"]?.stringValue, HLClock.parseInstant(expiresAt) != nil,
              let invitedBy = value["invitedBy"]?.stringValue, let signature = value["signature"]?.stringValue
        else { throw bad }
        let open = value["open"]?.stringValue
        guard (open == nil) == (value["uses"] == nil), open == nil || value["oneTimeKey"] != nil else { throw bad }
        self.init(url: url, profileID: profileID, profileName: profileName, root: root, member: member, role: role,
                  expiresAt: expiresAt, invitedBy: invitedBy, oneTimeKey: value["oneTimeKey"]?.stringValue,
                  open: open, uses: value["uses"]?.intValue, signature: signature)
    }

    init(url: String, profileID: String, profileName: String, root: String, member: String, role: Role, expiresAt: String,
         invitedBy: String, oneTimeKey: String?, open: String? = nil, uses: Int? = nil, signature: String) {
        (self.url, self.profileID, self.profileName, self.root) = (url, profileID, profileName, root)
        (self.member, self.role, self.expiresAt, self.invitedBy) = (member, role, expiresAt, invitedBy)
        (self.oneTimeKey, self.open, self.uses, self.signature) = (oneTimeKey, open, uses, signature)
    }

    /// The key that signed this invitation, if the signature over its fields is good.
    func signer() throws -> SSHPublicKey {
        do { return try SSHSignature.verify(signature, message: signedBytes, namespace: Self.namespace) } catch {
            throw ConcordError.invalidInput(.badInvitation, "the invitation's signature is not valid (\(error.localizedDescription)): it was altered; ask for it again")
        }
    }
}
