import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List the writes merges did not keep, newest merge first: each field with its own author.",
        discussion: """
        Each line is one write that lost: a field set or removed, or a delete, with who made it, on which \
        device, when and in which commit, and the write kept in its place. It is worked out from each \
        merge's parents and tree (what every device checked), not from what a merge's commit message says. \
        The lost version stays in the history: concord history <kind>/<id> shows it.
        """)

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Only writes you made (your identity's member).") var mine = false
    @Option(help: ArgumentHelp("Only merges made at or after DATE (as `concord log --since`).", valueName: "DATE")) var since: String?
    @Option(help: ArgumentHelp("Only this record.", valueName: "kind/id")) var record: String?
    @Flag(help: "Show times in UTC instead of local time.") var utc = false
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        if let since, AuditTime.parse(since, now: Int64(Date().timeIntervalSince1970)) == nil {
            throw ValidationError(AuditTime.problem("--since", since))
        }
    }

    func run() throws {
        let store = try profile.open()
        let filter = LostEditFilter(record: record, member: mine ? store.identity.member : nil,
                                    since: since.flatMap { AuditTime.parse($0, now: Int64(Date().timeIntervalSince1970)) })
        let lost = try store.read { try $0.lostEdits(filter) }
        if json {
            try printJSON(lost.map { LostEditOutput($0, utc: utc) })
        } else if lost.isEmpty {
            print(mine || since != nil || record != nil ? "no lost writes match" : "no merge in this profile's history left a write out")
        } else {
            for edit in lost { print(ConflictPhrasing.sentence(edit, utc: utc)) }
        }
    }
}
