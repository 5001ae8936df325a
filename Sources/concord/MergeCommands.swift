import ArgumentParser
import ConcordKit
import Foundation

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge another branch or commit into the profile with the per-kind policies (in memory, one signed merge commit).")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "What to merge: a branch, refs/remotes/<remote>/main, or a commit id.") var revision: String
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let report = try profile.open().sync.merge(revision: revision, as: try loadIdentity())
        if json {
            printJSON(.object([
                "outcome": .string(report.outcome.rawValue), "head": .string(report.head),
                "changedFiles": .array(report.changedFiles.map { .string($0) }),
                "resolved": .array(report.resolved.map { .string($0.trailerValue) }),
                "unresolved": .array(report.unresolved.map { .object(["path": .string($0.path), "savedAs": $0.savedAs.map { .string($0) } ?? .null, "reason": .string($0.reason)]) }),
                "leftOut": leftOutJSON(report.leftOut),
            ]))
        } else {
            print("\(report.outcome.rawValue): \(report.changedFiles.count) files changed, head \(report.head.prefix(7))")
            for conflict in report.resolved { print("resolved: " + ConflictPhrasing.sentence(conflict)) }
            for change in report.leftOut { print("left out: " + leftOutSentence(change)) }
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
            FileHandle.standardError.write(Data("concord merge-driver: \(problem)\n".utf8))
            throw ExitCode(ExitStatus.failure)
        }
    }
}

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the git config plain git needs (merge driver, signatures) and repair it with --fix.")

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Rewrite the merge driver and signing config with this concord binary, and .gitattributes (committed by an Admin when the branch holds a stale one).")
    var fix = false
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let findings = try profile.open().recovery.doctor(fix: fix, as: fix ? try? loadIdentity() : nil)
        if json {
            printJSON(.array(findings.map {
                .object(["problem": .string($0.problem), "fixed": .bool($0.fixed), "notFixedBecause": $0.notFixedBecause.map(JSONValue.string) ?? .null])
            }))
        } else if findings.isEmpty {
            print("all good: merge driver, signing config and .gitattributes are in place")
        } else {
            for finding in findings {
                let why = finding.notFixedBecause.map { "; not fixed: \($0): an Admin's 'concord doctor --fix' commits it" } ?? ""
                print((finding.fixed ? "fixed: " : "problem: ") + finding.problem + why)
            }
            if !fix, findings.contains(where: { !$0.fixed }) { print("run 'concord doctor --fix' to repair the git config") }
        }
        if findings.contains(where: { !$0.fixed }) { throw ExitCode(ExitStatus.failure) }
    }
}

struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts", abstract: "List conflicts that merges resolved by policy, newest first.")

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let conflicts = try profile.open().history.resolvedConflicts()
        if json {
            printJSON(.array(conflicts.map { item in
                let c = item.conflict
                return .object([
                    "commit": .string(item.commit), "record": .string("\(c.kind)/\(c.id)"), "policy": .string(c.policy.rawValue),
                    "winner": side(c.winner), "loser": side(c.loser), "text": .string(ConflictPhrasing.sentence(c)),
                ])
            }))
        } else if conflicts.isEmpty {
            print("no conflicts have been resolved in this profile's history")
        } else {
            for item in conflicts { print(ConflictPhrasing.sentence(item.conflict)) }
        }
    }

    private func side(_ side: MergeSide) -> JSONValue {
        .object(["member": .string(side.member), "device": .string(side.device), "at": .string(side.stamp.description), "change": .string(side.change.rawValue)])
    }
}

/// Conflicts phrased for people.
enum ConflictPhrasing {
    static func sentence(_ c: ResolvedConflict) -> String {
        func time(_ side: MergeSide) -> String {
            let iso = HLClock.formatInstant(side.stamp.wallMillis)
            return String(iso.dropFirst(11).prefix(5))
        }
        func describe(_ side: MergeSide) -> String {
            "\(side.member)'s \(side.change.rawValue) (\(time(side)), \(side.member)@\(side.device))"
        }
        return "\(c.kind)/\(c.id): \(describe(c.loser)) lost to \(describe(c.winner)); the lost version: concord history \(c.kind)/\(c.id)"
    }
}
