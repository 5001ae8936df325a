import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

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
