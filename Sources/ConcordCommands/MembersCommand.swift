import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Members: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "members",
        abstract: "List the profile's members, or add one.",
        subcommands: [ListMembers.self, AddMember.self],
        defaultSubcommand: ListMembers.self
    )

    struct ListMembers: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List members with role, status and devices.")

        @OptionGroup var profile: ProfileOption
        @Flag(help: "List the open invitations (made by 'concord share --open') instead of the members.") var open = false
        @Flag(help: "Print the result as JSON.") var json = false

        /// A member as `--json` prints it.
        struct MemberOutput: Encodable {
            /// `proven`: the key carries its holder's proof; false: an Admin vouched for it (or it predates format 5).
            struct Device: Encodable { let device: String, fingerprint: String, proven: Bool }

            let name: String, role: String, status: String
            @OrNull var revokedBy: String?
            @OrNull var revokedAt: String?
            @OrNull var expiresAt: String?
            let invitedBy: String
            @OrNull var joinedBy: String?
            let devices: [Device]

            init(_ member: Member) {
                (name, role, status, invitedBy) = (member.name, member.role.rawValue, member.status.rawValue, member.addedBy)
                (revokedBy, revokedAt, expiresAt, joinedBy) = (member.revokedBy, member.revokedAt, member.expiresAt, member.invitation)
                devices = member.keys.map { Device(device: $0.device, fingerprint: $0.publicKey.fingerprint, proven: $0.proof != nil) }
            }
        }

        /// An open invitation as `--open --json` prints it.
        struct InvitationOutput: Encodable {
            let id: String, role: String, uses: Int, used: Int, expiresAt: String, invitedBy: String, invitedAt: String, withdrawn: Bool

            init(_ use: OpenInvitationUse) {
                let invitation = use.invitation
                (id, role, uses, used, expiresAt) = (invitation.id, invitation.role.rawValue, invitation.uses, use.used, invitation.expiresAt)
                (invitedBy, invitedAt, withdrawn) = (invitation.invitedBy, invitation.invitedAt, invitation.withdrawn)
            }
        }

        func run() throws {
            let store = try profile.open()
            if open { return try listOpenInvitations(store) }
            let members = try store.read { try $0.members() }
            if json {
                try printJSON(members.map(MemberOutput.init))
            } else {
                for member in members {
                    let status = switch member.status {
                    case .revoked: "revoked by \(member.revokedBy ?? "?") at \(member.revokedAt ?? "?")"
                    case .invited: "pending (invited by \(member.addedBy), expires \(member.expiresAt ?? "?"))"
                    case .active: "active"
                    }
                    print("\(member.name)  \(member.role.rawValue)  \(status)  devices: \(member.keys.map(\.device).joined(separator: ", "))")
                }
                let open = try store.openInvitations().filter { $0.used < $0.invitation.uses }
                if !open.isEmpty { print("\(open.count) open invitation\(open.count == 1 ? "" : "s"): 'concord members --open' lists them") }
            }
        }

        private func listOpenInvitations(_ store: ConcordStore) throws {
            let invitations = try store.openInvitations()
            if json {
                try printJSON(invitations.map(InvitationOutput.init))
            } else if invitations.isEmpty {
                print("no open invitations")
            } else {
                for (invitation, used) in invitations.map({ ($0.invitation, $0.used) }) {
                    // A withdrawn one admits nobody more, whatever its count says.
                    let state = invitation.withdrawn ? "withdrawn, \(used) joined" : "\(used) of \(invitation.uses) joined"
                    print("\(invitation.id)  \(invitation.role.rawValue)  \(state)  "
                          + "(opened by \(invitation.invitedBy), expires \(invitation.expiresAt))")
                }
            }
        }
    }

    struct AddMember: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a member (or another device of one) by public key. Admins only.")

        @OptionGroup var profile: ProfileOption
        @Argument(help: "The member's name.") var name: String
        @Option(help: "admin, editor, user or viewer.") var role: Role
        @Option(help: "The member's public key line (ssh-ed25519 AAAA... name@device), as 'concord identity show --public-key' prints it.")
        var key: String
        @Option(help: "The device the key belongs to (default: the key line's comment after '@').") var device: String?
        @Option(help: "The key's proof of possession ('concord identity prove PROFILE-ID' on its device). Needed for a key of your own; without it, a key for another member is added on your word as Admin.")
        var proof: String?

        func run() throws {
            let publicKey = try SSHPublicKey(line: key)
            let comment = key.split(separator: " ").dropFirst(2).first.map(String.init) ?? ""
            guard let device = device ?? comment.split(separator: "@").last.map(String.init), !device.isEmpty else {
                throw ValidationError("give --device: the key line has no name@device comment")
            }
            let result = try profile.open().addMember(name, role: role, device: device, key: publicKey, proof: proof)
            if result.commit == nil {
                print("\(name) is already a \(result.value.role.rawValue) with that key: unchanged")
            } else {
                print("added \(name) (\(result.value.role.rawValue)) with device \(device)")
            }
        }
    }
}
