import ConcordModel
import ConcordTrust

/// `.concord/invitations/<id>.json` (format 4): an open invitation, for a public group session.
/// Anyone holding its link joins under a name of their own choosing, as `role`, until `uses`
/// people have joined by it or it expires, whichever comes first.
///
/// The link carries the private half of a one-time key whose public half is `key`; an acceptance
/// is a new member file naming this invitation (`Member.invitation`) and carrying that key's
/// signature over the root commit, the new member and their device key (`Acceptance`). How many
/// joined is counted from the member files, so it is the same on every device: a history in which
/// more members name the invitation than it has uses is invalid (`CommitRule.invitationUseProblem`),
/// and of two acceptances racing for the last use only the one the remote took first stands.
public struct OpenInvitation: Sendable, Equatable {
    /// The data format open invitations came with: opening one in an older profile moves it there.
    package static let firstFormat = 4

    /// The invitation's id, its file's name under `.concord/invitations/`.
    public let id: String
    /// The role whoever joins by it gets.
    public let role: Role
    /// How many people may join by it.
    public let uses: Int
    /// When it lapses, ISO-8601 UTC.
    public let expiresAt: String
    /// The Admin who opened it.
    public let invitedBy: String
    /// When it was opened, ISO-8601 UTC.
    public let invitedAt: String
    /// The public half of the one-time key the link carries.
    public let key: SSHPublicKey
    /// Set by a merge when the invitation was opened by an Admin revoked or demoted concurrently
    /// (`MembershipResolution`): nobody joins by it any more.
    public var withdrawn = false

    package init(id: String, role: Role, uses: Int, expiresAt: String, invitedBy: String, invitedAt: String, key: SSHPublicKey,
                 withdrawn: Bool = false) {
        (self.id, self.role, self.uses, self.expiresAt) = (id, role, uses, expiresAt)
        (self.invitedBy, self.invitedAt, self.key, self.withdrawn) = (invitedBy, invitedAt, key, withdrawn)
    }

    /// The most uses an open invitation may be given.
    public static let maxUses = 1_000

    package var json: JSONValue {
        .object([
            "id": .string(id), "role": .string(role.rawValue), "uses": .number(String(uses)), "expiresAt": .string(expiresAt),
            "invitedBy": .string(invitedBy), "invitedAt": .string(invitedAt), "key": .string(key.line(comment: nil)),
        ].merging(withdrawn ? ["withdrawn": .bool(true)] : [:]) { first, _ in first })
    }

    package static func decode(_ bytes: [UInt8], path: String) throws(CorruptDocument) -> OpenInvitation {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw CorruptDocument(path: path, reason: "\(error)")
        }
        guard let id = value["id"]?.stringValue, let role = value["role"]?.stringValue.flatMap(Role.init(parsing:)),
              let uses = value["uses"]?.intValue, (1...maxUses).contains(uses),
              let expiresAt = value["expiresAt"]?.stringValue, HLClock.parseInstant(expiresAt) != nil,
              let invitedBy = value["invitedBy"]?.stringValue, let invitedAt = value["invitedAt"]?.stringValue,
              let line = value["key"]?.stringValue, let key = try? SSHPublicKey(line: line) else {
            throw CorruptDocument(path: path, reason: "an open invitation needs id, role, uses (1–\(maxUses)), expiresAt, invitedBy, invitedAt and key")
        }
        var invitation = OpenInvitation(id: id, role: role, uses: uses, expiresAt: expiresAt, invitedBy: invitedBy, invitedAt: invitedAt, key: key)
        invitation.withdrawn = value["withdrawn"] == .bool(true)
        return invitation
    }

    /// How many of `members` joined by this invitation.
    package func used(by members: some Sequence<Member>) -> Int {
        members.reduce(0) { $0 + ($1.invitation == id ? 1 : 0) }
    }
}
