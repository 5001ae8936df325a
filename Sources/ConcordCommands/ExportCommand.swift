import ArgumentParser
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Print all live records and log entries as a dump.")

    @OptionGroup var profile: ProfileOption

    func run() throws {
        writeOutput(Data(try profile.open().read { try $0.exportDump() }.canonicalBytes()))
    }
}
