import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

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
