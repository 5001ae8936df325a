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
                "leftOut": leftOutJSON(report.leftOut), "contested": .array(report.contested.map { .string($0) }),
            ]))
        } else {
            print("\(report.outcome.rawValue): \(report.changedFiles.count) files changed, head \(report.head.prefix(7))")
            for conflict in report.resolved { print("resolved: " + ConflictPhrasing.sentence(conflict)) }
            for change in report.leftOut { print("left out: " + leftOutSentence(change)) }
            for name in report.contested { print("contested: " + contestedSentence(name)) }
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
        let profile = try profile.open()
        let identity = fix ? try? loadIdentity() : nil
        let findings = try profile.recovery.doctor(fix: fix, as: identity)
        // Only against a remote this profile has: without one, nothing is published.
        let hasRemote = try profile.sync.remotes().contains { $0.name == remote }
        var unpublishable = hasRemote ? try profile.setAside.find(remote: remote) : nil
        var setAside: SetAsideReport?
        if fix, unpublishable != nil {
            setAside = try profile.setAside.perform(remote: remote, as: try identity ?? loadIdentity())
            if setAside == nil { unpublishable = nil }
        }
        if json {
            var items: [JSONValue] = findings.map {
                .object(["problem": .string($0.problem), "fixed": .bool($0.fixed), "notFixedBecause": $0.notFixedBecause.map(JSONValue.string) ?? .null])
            }
            if let unpublishable { items.append(Self.json(unpublishable, setAside: setAside)) }
            printJSON(.array(items))
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

    private static func json(_ found: UnpublishableCommits, setAside: SetAsideReport?) -> JSONValue {
        var object: [String: JSONValue] = [
            "problem": .string(problem(found)), "fixed": .bool(setAside != nil), "notFixedBecause": .null,
            "remote": .string(found.remote), "lastPublishable": .string(found.lastPublishable),
            "commits": .array(found.refused.map {
                .object(["commit": .string($0.commit), "signer": $0.signer.map(JSONValue.string) ?? .null, "reason": .string($0.reason),
                         "builtOn": $0.builtOn.map(JSONValue.string) ?? .null])
            }),
        ]
        if let done = setAside {
            object["setAside"] = .object([
                "ref": .string(done.ref), "tip": .string(done.tip), "movedBackTo": .string(done.movedBackTo),
                "commit": done.commit.map(JSONValue.string) ?? .null, "reapplied": .array(done.reapplied.map(JSONValue.string)),
                "keptAside": .array(done.keptAside.map { .object(["path": .string($0.path), "reason": .string($0.reason)]) }),
            ])
        }
        return .object(object)
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
