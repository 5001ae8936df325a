import ArgumentParser
import ConcordKit
import Foundation

struct Members: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the profile's members, or add one.",
        subcommands: [ListMembers.self, AddMember.self],
        defaultSubcommand: ListMembers.self
    )

    struct ListMembers: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List members with role, status and devices.")

        @OptionGroup var profile: ProfileOption
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let members = try profile.open().members.list()
            if json {
                printJSON(.array(members.map { member in
                    .object([
                        "name": .string(member.name), "role": .string(member.role.rawValue), "status": .string(member.status.rawValue),
                        "devices": .array(member.keys.map { .object(["device": .string($0.device), "fingerprint": .string($0.publicKey.fingerprint)]) }),
                    ])
                }))
            } else {
                for member in members {
                    print("\(member.name)  \(member.role.rawValue)  \(member.status.rawValue)  devices: \(member.keys.map(\.device).joined(separator: ", "))")
                }
            }
        }
    }

    struct AddMember: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a member (or another device of one) by public key. Admins only.")

        @OptionGroup var profile: ProfileOption
        @Argument(help: "The member's name.") var name: String
        @Option(help: "admin, editor, user or viewer.") var role: String
        @Option(help: "The member's public key line (ssh-ed25519 AAAA... name@device), as 'concord identity show --public-key' prints it.")
        var key: String
        @Option(help: "The device the key belongs to (default: the key line's comment after '@').") var device: String?

        func validate() throws {
            guard Role(parsing: role) != nil else { throw ValidationError("unknown role \"\(role)\": use admin, editor, user or viewer") }
        }

        func run() throws {
            let publicKey = try SSHPublicKey(line: key)
            let comment = key.split(separator: " ").dropFirst(2).first.map(String.init) ?? ""
            guard let device = device ?? comment.split(separator: "@").last.map(String.init), !device.isEmpty else {
                throw ValidationError("give --device: the key line has no name@device comment")
            }
            let result = try profile.open().members.add(
                name, role: Role(parsing: role) ?? .viewer, device: device, key: publicKey, as: try loadIdentity())
            if result.commit == nil {
                print("\(name) is already a \(result.value.role.rawValue) with that key: unchanged")
            } else {
                print("added \(name) (\(result.value.role.rawValue)) with device \(device)")
            }
        }
    }
}
