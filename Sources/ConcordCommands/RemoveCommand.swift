import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Delete a record (it becomes a tombstone; its history stays).")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The record, as <kind>/<id>.") var reference: String

    func run() throws {
        let (store, kind, id) = try profile.open(record: reference)
        report(try store.write { try $0.delete(kind, id) }, unchanged: "")
    }
}
