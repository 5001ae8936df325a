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

struct Revoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a member's access (Admins only). Their devices stop being trusted from this commit on.",
        discussion: "Sync to publish it: every other device then refuses their commits, and their own devices report \"access removed\" and delete their copy. The last active Admin cannot be revoked.")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The member to revoke.") var member: String

    func run() throws {
        let result = try profile.open().revoke(member)
        print("revoked \(member) (commit \(result.commit?.prefix(7) ?? "none")); run 'concord sync' to publish it")
    }
}

struct RoleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "role", abstract: "Change a member's role (Admins only; the last active Admin cannot be demoted).")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The member.") var member: String
    @Argument(help: "admin, editor, user or viewer.") var role: Role

    func run() throws {
        let result = try profile.open().setRole(member, to: role)
        print(result.commit == nil ? "\(member) is already \(result.value.role.rawValue): unchanged" : "\(member) is now \(result.value.role.rawValue)")
    }
}

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Add or remove your own device keys (any member, for their own keys only).",
        subcommands: [AddDevice.self, RemoveDevice.self])

    struct AddDevice: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a device key to your own keys.")

        @OptionGroup var profile: ProfileOption
        @Option(help: "The new device's name.") var name: String
        @Option(help: "The new device's public key line, as 'concord identity show --public-key' prints it there.") var key: String
        @Option(help: "The new device's proof of possession of that key, as 'concord identity prove PROFILE-ID' prints it there (needed from data format 5 on).")
        var proof: String?

        func run() throws {
            _ = try profile.open().addOwnDevice(name, key: try SSHPublicKey(line: key), proof: proof)
            print("added device \(name); run 'concord sync', then 'concord clone' on that device")
        }
    }

    struct RemoveDevice: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove one of your own device keys.",
            discussion: """
            Name the device by its label or by its key's fingerprint (SHA256:..., as 'concord members --json' \
            shows it). Anyone holding one of your keys can relabel your keys, so a label that names two keys, \
            or this device's own key, is refused: name the fingerprint instead.
            """)

        @OptionGroup var profile: ProfileOption
        @Argument(help: "The device's label, or its key's fingerprint (SHA256:...).") var name: String

        func run() throws {
            let store = try profile.open()
            let before = Set(try store.read { try $0.members() }.first { $0.name == store.identity.member }?.keys.map(\.publicKey.fingerprint) ?? [])
            let after = Set(try store.removeDevice(name).value.keys.map(\.publicKey.fingerprint))
            // The key itself, named: a label can have been changed by whoever holds one of this member's keys.
            print("removed device \(name) (key \(before.subtracting(after).sorted().joined(separator: ", "))); run 'concord sync' to publish it")
        }
    }
}

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

struct Accept: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept",
        abstract: "Accept an invitation: clone the profile, check the invitation against it, join as active, and send the acceptance.",
        discussion: """
        Refused, leaving nothing behind, when the invitation expired, was used up or withdrawn, was altered, names another \
        history or key, or the remote cannot be reached to record the acceptance. An open invitation is joined under this \
        device's identity name.
        """)

    @Argument(help: "The invitation text (concord-invitation-1:...), a file holding it, or - to read it from standard input.")
    var invitation: String
    @Argument(help: "The new, empty directory for the profile.") var directory: String
    @Option(name: .customLong("as"), help: "The name to join an open invitation under; it must be this device's identity name.")
    var name: String?
    @Option(help: "Trust this ssh host key fingerprint (SHA256:...) for the remote.") var trustHost: String?
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        var text = invitation
        if invitation == "-" {
            text = String(decoding: readInput(), as: UTF8.self)
        } else if !text.hasPrefix(Invitation.prefix), let file = try? String(contentsOfFile: invitation, encoding: .utf8) {
            text = file
        }
        let parsed = try Invitation(text: text)
        let identity = try loadIdentity()
        if let name, name != identity.member {
            throw ValidationError("this device's identity is \(identity.member), not \(name): members join under their identity's name; "
                                  + "use a CONCORD_HOME whose identity is \(name) ('concord identity new --name \(name) --device DEVICE')")
        }
        if name != nil, parsed.open == nil { throw ValidationError("--as is for open invitations; this one is for \(parsed.member)") }
        let environment = try processEnvironment()
        let (store, sync) = try SetUpFailure.running("concord accept <invitation> \(directory)") {
            try ConcordStore.accept(parsed, into: URL(fileURLWithPath: directory), identity: identity, environment: environment, trustHost: trustHost)
        }
        let role = try store.read { try $0.members() }.first { $0.name == identity.member }?.role ?? parsed.role
        if json {
            try printJSON(["profile": store.info.name, "member": identity.member, "role": role.rawValue, "path": store.directory.path,
                           "head": sync.head])
        } else {
            print("joined \"\(store.info.name)\" as \(identity.member) (\(role.rawValue)) in \(store.directory.path)")
        }
    }
}

/// Roles are parsed where they are given: `--role editor`, `concord role bob viewer`.
extension Role: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}
