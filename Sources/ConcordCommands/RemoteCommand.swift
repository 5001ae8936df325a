import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.ProcessMemory
import Foundation
import Synchronization

struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote", abstract: "Manage the bare repositories this profile syncs with.",
        subcommands: [Add.self, ListRemotes.self, RemoveRemote.self, Trust.self, Restore.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a remote: a directory path or ssh://user@host[:port]/path.git.")
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name, e.g. origin.") var name: String
        @Argument(help: "A path to a bare repository, or ssh://user@host[:port]/path.git.") var url: String

        func run() throws {
            try profile.open().addRemote(name, url: url)
            print("added remote \(name)")
        }
    }

    struct ListRemotes: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List remotes and their URLs.")
        @OptionGroup var profile: ProfileOption
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let remotes = try profile.open().read { try $0.remotes() }
            if json {
                try printJSON(remotes.map { ["name": $0.name, "url": $0.url] })
            } else {
                for remote in remotes { print("\(remote.name)  \(remote.url)") }
            }
        }
    }

    struct RemoveRemote: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a remote (nothing on the server changes).")
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name.") var name: String

        func run() throws {
            try profile.open().removeRemote(name)
            print("removed remote \(name)")
        }
    }

    struct Trust: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trust",
            abstract: "Connect to an ssh remote and trust the host key it presents ($CONCORD_HOME/known_hosts).")
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name.") var name: String

        func run() throws {
            let fingerprint = try profile.open().trustRemote(name)
            print("trusted the host key of \(name): \(fingerprint)")
        }
    }
}

extension RemoteCommand {
    struct Restore: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Put back a remote's main that devices refuse (Admins only).",
            discussion: """
                For a path remote someone pushed a commit to with plain git, or moved back or rewrote past what this \
                device fetched, so that every sync stops with exit 5. Fetches the remote's main, checks it, merges in \
                the newest commit of it the rule accepts (a rolled-back or rewritten main whole, as a side of this \
                device's line), and moves the remote's main to this device's verified main (a compare-and-swap against \
                the damaged tip), keeping the damaged tip on the remote under refs/concord/damaged/<time>. Exit 0 with \
                nothing done when the remote's main passes the rule and holds what this device fetched.
                """)
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name.") var name = "origin"
        @Flag(help: "Print the result as JSON.") var json = false

        /// What `--json` prints: the restore's report, every field null when there was nothing to restore.
        struct Output: Encodable {
            let remote: String, restored: Bool
            @OrNull var damagedTip: String?
            @OrNull var keptAs: String?
            @OrNull var refusal: String?
            @OrNull var merged: String?
            @OrNull var main: String?
        }

        func run() throws {
            let report: RemoteRestoreReport?
            do {
                report = try profile.open().restoreRemote(name)
            } catch where json {
                try printJSON(FailureOutput(error))
                throw error
            }
            if json {
                try printJSON(Output(remote: name, restored: report != nil, damagedTip: report?.damagedTip, keptAs: report?.keptAs,
                                     refusal: report?.refusal, merged: report?.merged, main: report?.restoredTo))
            } else if let report {
                print("restored \(name)'s main to \(report.restoredTo) (this device's verified main"
                      + (report.merged.map { ", with \($0) from the damaged main merged in" } ?? "") + ")")
                print("the damaged main \(report.damagedTip) is kept on \(name) as \(report.keptAs) (refused: \(report.refusal))")
                print("every device syncs again as usual")
            } else {
                print("\(name)'s main passes the rule: nothing to restore")
            }
        }
    }
}
