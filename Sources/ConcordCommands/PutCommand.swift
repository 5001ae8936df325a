import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Put: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put", abstract: "Create or replace a record: concord put <kind>/<id> --json '{...}'.")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The record, as <kind>/<id>.") var reference: String
    @OptionGroup var data: DataOptions

    func run() throws {
        PerformanceTrace.start()
        let (store, kind, id) = try profile.open(record: reference)
        PerformanceTrace.step("profile opened")
        let object = try data.object(for: "\(kind.name)/\(id)")
        let result = try store.write { try $0.put(kind, id, data: object) }
        report(result, unchanged: "\(kind.name)/\(id): unchanged")
    }
}
