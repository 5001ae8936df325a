import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.ProcessMemory
import Foundation
import Synchronization

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Fetch, check, merge with the policies, and push (never forced).",
        discussion: "Exit 3 when the remote is unreachable, 4 when it refuses this device or the push, 5 when it holds a commit that breaks the format (nothing local changes).")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote to sync with.") var remote = "origin"
    @Flag(help: "Print the result as JSON.") var json = false
    @Flag(help: "When an admin revoked this device's member, keep the local copy (default: delete it).") var keep = false

    func run() throws {
        let report: SyncReport
        let member: String
        do {
            let store = try profile.open()
            member = store.identity.member
            report = try store.sync(remote: remote, keepCopy: keep)
        } catch where json {
            // Scripts get a JSON error object on stdout as well as the line on stderr, whatever failed.
            try printJSON(FailureOutput(error))
            throw error
        }
        for warning in report.warnings { writeError("concord: warning: \(warning)\n") }
        if json {
            try printJSON(SyncOutput(report))
        } else {
            print(syncLine(report))
            for edit in report.yours { print(ConflictPhrasing.yours(edit, utc: false)) }
            for edit in report.lost where !report.yours.contains(edit) { print("lost: " + ConflictPhrasing.sentence(edit, utc: false)) }
            for change in report.leftOut { print("left out: " + leftOutSentence(change)) }
            for name in report.contested { print("contested: " + contestedSentence(name)) }
            for decision in report.fallen { print("does not count: " + decision.line(for: member)) }
        }
        try failOnUnresolved(report.unresolved)
    }
}
