import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Share: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Invite a member, or open an invitation for a group (Admins only): prints an invitation to send by any channel.",
        discussion: """
        With --key, only that key can accept. Without it, a one-time key is made and travels in the invitation \
        (a link invitation): anyone holding the text can accept it once, before it expires, so send it privately. \
        Only the invitation goes to standard output (what to do with it goes to standard error), so \
        'concord share bob --role editor > invite.txt' saves just the invitation. \
        The invitee runs 'concord accept <invitation> <dir>' (the text, a file holding it, or - for standard input). Until then 'concord members' lists them as pending.

        With --open (and no member name), anyone holding the invitation joins under their own identity's name, \
        as --role (not admin), until --uses people have joined or it expires: for a public group session. \
        'concord members --open' shows how many joined.
        """)

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The invitee's member name (none with --open).") var member: String?
    @Option(help: "admin, editor, user or viewer.") var role: Role
    @Option(help: "The invitee's public key line (ssh-ed25519 AAAA... name@device), if known.") var key: String?
    @Flag(help: "Open invitation: anyone holding it may join, up to --uses people.") var open = false
    @Option(help: "With --open: how many people may join by it (default 10).") var uses: Int?
    @Option(help: "How long the invitation stays valid: e.g. 30m, 12h, 7d (default 7d with --key, 1d with --open, else 2d).")
    var expires: String?
    @Option(help: "The remote whose URL the invitation carries.") var remote = "origin"
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        if let expires, Share.seconds(expires) == nil { throw ValidationError("--expires takes a number and m, h or d, e.g. 2d, not \"\(expires)\"") }
        if open {
            if member != nil { throw ValidationError("--open invites no one by name: drop \"\(member ?? "")\" (each joiner uses their own name)") }
            if key != nil { throw ValidationError("--open takes no --key: whoever holds the invitation may join") }
            if role == .admin { throw ValidationError("an open invitation cannot make Admins: invite an Admin by name") }
        } else {
            if member == nil { throw ValidationError("name the member to invite, or use --open for an open invitation") }
            if uses != nil { throw ValidationError("--uses goes with --open") }
        }
    }

    static func seconds(_ text: String) -> Int64? {
        guard let unit = text.last, let count = Int64(text.dropLast()), count > 0, count < 10_000 else { return nil }
        switch unit {
        case "m": return count * 60
        case "h": return count * 3_600
        case "d": return count * 86_400
        default: return nil
        }
    }

    func run() throws {
        if open { return try shareOpen() }
        let member = member ?? ""
        let publicKey = try key.map { try SSHPublicKey(line: $0) }
        let device = key?.split(separator: " ").dropFirst(2).first?.split(separator: "@").last.map(String.init)
        let lifetime = Share.seconds(expires ?? (key == nil ? "2d" : "7d")) ?? 172_800
        let shared = try profile.open().share(member, role: role, key: publicKey, device: device, expiresIn: lifetime, remote: remote)
        if json {
            try printJSON(["member": member, "role": role.rawValue, "expiresAt": shared.invitation.expiresAt, "invitation": shared.invitation.text])
        } else {
            explain("invited \(member) as \(shared.member.role.rawValue) until \(shared.invitation.expiresAt); run 'concord sync', then send them "
                    + "the invitation (the line on standard output)")
            print(shared.invitation.text)
        }
    }

    /// What `share --open --json` prints.
    struct OpenOutput: Encodable {
        let id: String, role: String, uses: Int, expiresAt: String, invitation: String
    }

    private func shareOpen() throws {
        let shared = try profile.open().shareOpen(role: role, uses: uses ?? 10, expiresIn: Share.seconds(expires ?? "1d") ?? 86_400,
                                                  remote: remote)
        let invitation = shared.invitation
        if json {
            try printJSON(OpenOutput(id: invitation.id, role: role.rawValue, uses: invitation.uses, expiresAt: invitation.expiresAt,
                                     invitation: shared.text.text))
        } else {
            explain("opened invitation \(invitation.id): up to \(invitation.uses) people may join as \(role.rawValue) until "
                    + "\(invitation.expiresAt); run 'concord sync', then share the invitation (the line on standard output)")
            print(shared.text.text)
        }
    }
}
