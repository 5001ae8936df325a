import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Leave: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Leave a profile: record your departure (unless you are an Admin), then delete this device's copy.",
        discussion: """
            When you are not an Admin and the remote answers, your member file is first marked as left (revoked by \
            yourself, no device keys) and synced, so the others see you left and your other devices remove their copies. \
            Offline, the copy is still deleted (unsent edits are saved as a dump under $CONCORD_HOME/saved/) and the \
            departure is not recorded: ask an Admin to revoke you. An Admin's membership stays: hand over and revoke \
            yourself, or 'concord destroy'. Data already synced to other people's devices is not recalled.
            """)

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote to record the departure on.") var remote = "origin"
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let store = try profile.open()
        let identity = store.identity
        let name = store.info.name, path = store.directory.path
        let mine = try store.read { try $0.members() }.first { $0.name == identity.member }
        let hasRemote = try store.read { try $0.remotes() }.contains { $0.name == remote }
        var departure: String
        switch (mine?.status, mine?.role) {
        case (.active?, .admin?):
            departure = "not recorded: \(identity.member) is an Admin of \"\(name)\" (name another Admin and revoke yourself, or 'concord destroy')"
        case (.active?, _) where hasRemote:
            // Synced first, so that the departure goes on top of the remote's main: a merge after it would be
            // signed by a member who left, and no device accepts that.
            do {
                _ = try store.sync(remote: remote)
                try store.leave()
                _ = try store.sync(remote: remote)
                departure = "recorded on \(remote)"
            } catch ConcordError.accessRemoved {
                departure = "not needed: access had already been removed"
            } catch ConcordError.offline(_, let reason, _) {
                departure = "not recorded: \(remote) could not be reached (\(reason)); ask an Admin to revoke \(identity.member)"
            } catch {
                departure = "not recorded: \(remote) did not take it (\(describe(error))); ask an Admin to revoke \(identity.member)"
            }
        case (.active?, _):
            departure = "not recorded: the profile has no remote \(remote)"
        default:
            departure = "not needed: \(identity.member) is not an active member"
        }
        let saved = try store.removeLocalCopy(unsentTo: hasRemote ? remote : "")
        if json {
            try printJSON(["profile": name, "path": path, "departure": departure, "saved": saved?.path] as [String: String?])
        } else {
            print("left \"\(name)\": departure \(departure); this device's copy at \(path) was deleted"
                  + (saved.map { "; unsent edits saved in \($0.path)" } ?? ""))
        }
    }
}
