import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Profiles: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profiles",
        abstract: "List the profiles on this device: name, path, your role, remote, last sync and access.",
        discussion: "Access is active, key not registered (a member, but this device's key is not one of yours there yet: "
            + "writes are refused until an Admin adds it), pending (invited, not accepted), removed (an Admin revoked you: the copy "
            + "was deleted), not a member, or missing (the directory was moved or deleted outside concord). "
            + "Each identity ($CONCORD_HOME) has its own list.")

    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let environment = try processEnvironment()
        let identity = try loadIdentity()
        let summaries = ProfileRegistry(home: environment.home).summaries(for: identity, environment: environment)
        if json {
            try printJSON(summaries.map { summary -> [String: String?] in
                ["name": summary.name, "path": summary.path, "id": summary.id, "role": summary.role?.rawValue, "remote": summary.remote,
                 "lastSync": summary.lastSync, "access": summary.access, "note": summary.note]
            })
            return
        }
        if summaries.isEmpty { print("no profiles on this device for \(identity.member): 'concord init', 'concord clone' or 'concord accept' adds one") }
        for summary in summaries {
            // A copy that is gone has no role, remote or sync to show: only why.
            if ["missing", "removed"].contains(summary.access) {
                print("\(summary.name)  \(summary.path)  \(summary.access)" + (summary.note.map { " (\($0))" } ?? ""))
                continue
            }
            let role = summary.role.map(\.rawValue) ?? "-"
            let synced = summary.lastSync.map { "synced \($0)" } ?? "never synced"
            print("\(summary.name)  \(summary.path)  \(role)  \(summary.access)  \(summary.remote ?? "no remote")  \(synced)"
                  + (summary.note.map { "  (\($0))" } ?? "")
                  + (summary.access == "key not registered" ? ": \(keyRegistrationAdvice(identity.member))" : ""))
        }
    }
}
