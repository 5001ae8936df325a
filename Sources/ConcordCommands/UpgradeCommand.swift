import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Upgrade: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Move the profile to this concord's data format in one signed commit (Admins only).",
        discussion: """
            Format 5 adds key proofs: from the upgrade on, every key added to a member file needs its holder's proof of \
            possession, unless an Admin adds it for another member (docs/security.md, "A key belongs to one member"). \
            Format 6 lets an imported log entry keep who first wrote it, when and on which device (its "origin"). \
            Nothing else changes. Run 'concord sync' afterwards to publish it; every device must then run a concord that \
            reads the new format (an older one refuses the profile with "upgrade concord"). Running it again does nothing.
            """)

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        let from: Int, to: Int
        @OrNull var commit: String?
    }

    func run() throws {
        let upgrade = try Maintenance.upgradeFormat(at: profile.url, environment: try processEnvironment(), as: try loadIdentity())
        if json {
            try printJSON(Output(from: upgrade.from, to: upgrade.to, commit: upgrade.commit))
        } else if upgrade.commit == nil {
            print("already format \(upgrade.to): nothing to do")
        } else {
            print("upgraded from format \(upgrade.from) to \(upgrade.to) (commit \(upgrade.commit?.prefix(7) ?? "")); run 'concord sync' to publish it")
        }
    }
}
