import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print a record's canonical JSON, or a log entry's (<log kind>/<id>, as 'concord ls' lists it).")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The record or log entry, as <kind>/<id>.") var reference: String

    func run() throws {
        let reference = reference
        let bytes = try profile.open().read { reader in
            let (kind, id) = try reader.reference(reference)
            guard kind.policy == .append else { return try reader.get(kind, id).encoded() }
            return try reader.logEntries(kind, id: id).flatMap { $0.encodedLine() + [0x0A] }
        }
        writeOutput(Data(bytes))
    }
}
