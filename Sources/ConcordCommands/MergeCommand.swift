import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge another branch or commit into the profile with the per-kind policies (in memory, one signed merge commit).",
        discussion: """
            A remote's main (origin/main, refs/remotes/origin/main) becomes the merge's first parent, its main line, as \
            'concord sync' merges; a peer's branch or a commit id is merged in as a side line, this profile's own line \
            first. Membership decisions of the side line count only as far as the main line's membership allows when \
            they arrive; those that do not are listed as 'does not count' (docs/security.md).
            """)

    @OptionGroup var profile: ProfileOption
    @Argument(help: "What to merge: a branch, refs/remotes/<remote>/main, or a commit id.") var revision: String
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        struct Unresolved: Encodable {
            let path: String
            @OrNull var savedAs: String?
            let reason: String
        }

        let outcome: String, head: String, changedFiles: [String], resolved: [String], unresolved: [Unresolved]
        let leftOut: [LeftOutOutput], contested: [String], fallen: [FallenOutput]

        init(_ report: MergeReport) {
            (outcome, head, changedFiles, resolved) = (report.outcome.rawValue, report.head, report.changedFiles, report.resolved.map(\.trailerValue))
            unresolved = report.unresolved.map { Unresolved(path: $0.path, savedAs: $0.savedAs, reason: $0.reason) }
            (leftOut, contested, fallen) = (report.leftOut.map(LeftOutOutput.init), report.contested, report.fallen.map(FallenOutput.init))
        }
    }

    func run() throws {
        let store = try profile.open()
        let identity = store.identity
        let report = try store.merge(revision: revision)
        if json {
            try printJSON(Output(report))
        } else {
            print("\(report.outcome.rawValue): \(report.changedFiles.count) files changed, head \(report.head.prefix(7))")
            for edit in try store.read({ try $0.lostEdits(LostEditFilter(merges: [report.head])) }) {
                print("lost: " + ConflictPhrasing.sentence(edit, utc: false))
            }
            for change in report.leftOut { print("left out: " + leftOutSentence(change)) }
            for name in report.contested { print("contested: " + contestedSentence(name)) }
            for decision in report.fallen { print("does not count: " + decision.line(for: identity.member)) }
        }
        try failOnUnresolved(report.unresolved)
    }
}
