import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

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
