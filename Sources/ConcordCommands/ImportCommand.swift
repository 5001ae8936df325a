import ArgumentParser
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a dump ({\"records\":[...],\"logs\":[...]}) as one commit; importing it again changes nothing.")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The dump file, or - to read the dump from standard input.") var file: String
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        @OrNull var commit: String?
        let records: Int, logEntries: Int
        @OrNull var formatUpgradedTo: Int?
    }

    func run() throws {
        PerformanceTrace.start()
        let store = try profile.open()
        PerformanceTrace.step("profile opened")
        let bytes = file == "-" ? readInput() : FileManager.default.contents(atPath: file)
        guard let bytes else { throw ConcordError.io(.read, path: file, "cannot read \(file): no such file or not readable") }
        PerformanceTrace.step("dump read")
        let dump = try Dump.parse(Array(bytes), source: file == "-" ? "standard input" : file)
        PerformanceTrace.step("dump parsed")
        let result = try store.importDump(dump)
        if json {
            try printJSON(Output(commit: result.commit, records: result.value.records, logEntries: result.value.logEntries,
                                 formatUpgradedTo: result.value.formatUpgradedTo))
        } else if let commit = result.commit {
            print("imported \(result.value.items) of \(dump.records.count + dump.logs.count) items in commit \(commit.prefix(7))"
                  + (result.value.formatUpgradedTo.map { "; the profile is now data format \($0), so log entries keep who first wrote them" } ?? ""))
        } else {
            print("nothing to import: all \(dump.records.count + dump.logs.count) items are already present")
        }
    }
}
