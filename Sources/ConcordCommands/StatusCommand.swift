import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.ProcessMemory
import Foundation
import Synchronization

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Ahead/behind a remote (as of the last fetch) and the last successful sync.")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote.") var remote = "origin"
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        let remote: String, url: String, ahead: Int, behind: Int
        @OrNull var lastSync: String?
    }

    func run() throws {
        let remote = remote
        let status = try profile.open().read { try $0.syncStatus(remote: remote) }
        if json {
            try printJSON(Output(remote: status.remote, url: status.url, ahead: status.ahead, behind: status.behind, lastSync: status.lastSync))
        } else {
            print("remote \(status.remote): \(status.url)")
            print("ahead \(status.ahead), behind \(status.behind) (as of the last fetch)")
            print("last sync: \(status.lastSync ?? "never")")
        }
    }
}
