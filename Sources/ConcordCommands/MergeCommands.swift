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

struct MergeDriverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge-driver",
        abstract: "Run by plain git as merge.concord.driver: merge %O %A %B for path %P with Concord's policies.")

    @Argument(help: "%O: the common ancestor's version (empty for add/add).") var ancestor: String
    @Argument(help: "%A: our version; overwritten with the result.") var ours: String
    @Argument(help: "%B: their version.") var theirs: String
    @Argument(help: "%P: the path in the repository.") var path: String

    func run() throws {
        if let problem = try MergeDriverRun.run(ancestor: ancestor, ours: ours, theirs: theirs, path: path) {
            writeError("concord merge-driver: \(problem)\n")
            throw ExitCode(ExitStatus.failure)
        }
    }
}

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the git config plain git needs and this device's unsent commits; repair both with --fix.",
        discussion: """
            Lists each unsent commit that sync would refuse to publish (a commit made with plain git: unsigned, or \
            outside the member's role), with its signer and the rule's reason. --fix keeps those commits under \
            refs/concord/set-aside/<time>, moves main back to the newest commit the rule accepts, and writes again, as \
            one signed commit by this device, the records and log entries they changed that this member may write.
            """)

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote whose last fetched main the unsent commits are counted from.") var remote = "origin"
    @Flag(help: "Rewrite the merge driver and signing config with this concord binary, .gitattributes (committed by an Admin when the branch holds a stale one), and set aside the unsent commits sync would refuse.")
    var fix = false
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let outcome = try Maintenance.doctor(at: profile.url, environment: try processEnvironment(), remote: remote, fix: fix,
                                             identity: loadIdentity)
        let (findings, unpublishable, setAside) = (outcome.findings, outcome.unpublishable, outcome.setAside)
        if json {
            let items = findings.map { Item(problem: $0.problem, fixed: $0.fixed, notFixedBecause: $0.notFixedBecause) }
            try printJSON(items + (unpublishable.map { [Self.item($0, setAside: setAside)] } ?? []))
        } else if findings.isEmpty, unpublishable == nil {
            print("all good: merge driver, signing config and .gitattributes are in place, and every unsent commit passes the rule")
        } else {
            for finding in findings {
                let why = finding.notFixedBecause.map { "; not fixed: \($0): an Admin's 'concord doctor --fix' commits it" } ?? ""
                print((finding.fixed ? "fixed: " : "problem: ") + finding.problem + why)
            }
            if let unpublishable { Self.explain(unpublishable, setAside: setAside) }
            if !fix, findings.contains(where: { !$0.fixed }) || unpublishable != nil {
                print("run 'concord doctor --fix' to repair" + (unpublishable == nil ? " the git config" : ""))
            }
        }
        if findings.contains(where: { !$0.fixed }) || (unpublishable != nil && setAside == nil) { throw ExitCode(ExitStatus.failure) }
    }

    private static func problem(_ found: UnpublishableCommits) -> String {
        "\(found.refused.count) unsent commit(s) of this device would be refused by every other device: sync sends nothing until they are set aside"
    }

    private static func explain(_ found: UnpublishableCommits, setAside: SetAsideReport?) {
        print((setAside == nil ? "problem: " : "fixed: ") + problem(found))
        for commit in found.refused {
            print("  \(commit.commit)" + (commit.signer.map { " by \($0)" } ?? "") + ": \(commit.reason)")
        }
        guard let done = setAside else {
            print("  to do: 'concord doctor --fix' keeps them under \(SetAside.refPrefix)<time>, moves main back to \(found.lastPublishable) "
                  + "(the newest commit the rule accepts) and makes their records and log entries again, signed by this device, where its member may write them")
            return
        }
        print("  kept: \(done.ref) points at \(done.tip) (nothing is lost: 'git log \(done.ref)')")
        print("  main moved back to \(done.movedBackTo)")
        if let commit = done.commit {
            print("  made again in \(commit), signed by this device: \(done.reapplied.joined(separator: ", "))")
        }
        for kept in done.keptAside {
            print("  only in \(done.ref): \(kept.path): \(kept.reason)")
        }
        print("  run 'concord sync' to publish")
    }

    /// One item of `--json`'s list: a finding, or the unsent commits sync would refuse (with what `--fix` set aside).
    struct Item: Encodable {
        struct Refused: Encodable {
            let commit: String
            @OrNull var signer: String?
            let reason: String
            @OrNull var builtOn: String?
        }

        struct SetAsideOutput: Encodable {
            struct Kept: Encodable { let path: String, reason: String }

            let ref: String, tip: String, movedBackTo: String
            @OrNull var commit: String?
            let reapplied: [String]
            let keptAside: [Kept]
        }

        let problem: String
        let fixed: Bool
        @OrNull var notFixedBecause: String?
        var remote: String?
        var lastPublishable: String?
        var commits: [Refused]?
        var setAside: SetAsideOutput?
    }

    private static func item(_ found: UnpublishableCommits, setAside done: SetAsideReport?) -> Item {
        Item(problem: problem(found), fixed: done != nil, notFixedBecause: nil, remote: found.remote, lastPublishable: found.lastPublishable,
             commits: found.refused.map { Item.Refused(commit: $0.commit, signer: $0.signer, reason: $0.reason, builtOn: $0.builtOn) },
             setAside: done.map { done in
                 Item.SetAsideOutput(ref: done.ref, tip: done.tip, movedBackTo: done.movedBackTo, commit: done.commit, reapplied: done.reapplied,
                                     keptAside: done.keptAside.map { Item.SetAsideOutput.Kept(path: $0.path, reason: $0.reason) })
             })
    }
}

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

/// Lost writes phrased for people.
enum ConflictPhrasing {
    /// `scenes/y (a): alice's edit (10:00:05, alice@laptop, 3f2a1b9) lost to carol's edit (10:00:07, carol@tablet) in merge 9c1d2e4; the lost version: concord history scenes/y`.
    static func sentence(_ edit: LostEdit, utc: Bool) -> String {
        let what = edit.field.map { "\(edit.record) (\($0))" } ?? edit.record
        let commit = edit.loserCommit.map { ", \($0.prefix(7))" } ?? ""
        return "\(what): \(edit.loser.member)'s \(change(edit.loser)) (\(time(edit.loser, utc: utc)), \(edit.loser.member)@\(edit.loser.device)\(commit)) "
            + "lost to \(edit.winner.member)'s \(change(edit.winner)) (\(time(edit.winner, utc: utc)), \(edit.winner.member)@\(edit.winner.device)) "
            + "in merge \(edit.merge.prefix(7)); the lost version: concord history \(edit.record)"
    }

    /// What a sync tells the member whose write it was: `your edit of scenes/y (a) lost to carol's edit at 10:03:05; …`.
    static func yours(_ edit: LostEdit, utc: Bool) -> String {
        let what = edit.field.map { "\(edit.record) (\($0))" } ?? edit.record
        return "your \(change(edit.loser)) of \(what) lost to \(edit.winner.member)'s \(change(edit.winner)) at \(time(edit.winner, utc: utc)); "
            + "the lost version: concord history \(edit.record)"
    }

    private static func change(_ side: MergeSide) -> String { side.change == .delete ? "delete" : "edit" }

    /// The write's time to the second, as `concord log` shows times.
    private static func time(_ side: MergeSide, utc: Bool) -> String {
        let formatted = AuditTime.format(side.stamp.wallMillis / 1000, utc: utc)
        return String(formatted.dropFirst(11))
    }
}
