import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

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
