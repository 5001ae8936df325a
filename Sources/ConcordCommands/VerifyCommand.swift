import ArgumentParser
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every commit of the history: signed by an active member, changing only what their role may write.",
        discussion: "Exit 5, naming the first invalid commit, its signer and the rule it breaks, when one fails.")

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        let verified: Int
        @OrNull var head: String?
    }

    func run() throws {
        let report: VerificationReport
        do {
            report = try Maintenance.verify(at: profile.url, environment: try processEnvironment())
        } catch let error as ConcordError where json {
            try printJSON(FailureOutput(error))
            throw error
        }
        if json {
            try printJSON(Output(verified: report.commits, head: report.head))
        } else {
            print("\(report.commits) commits verified")
        }
    }
}
