import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Append: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append", abstract: "Append an entry to a log kind; prints the new entry's id.")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The log kind, e.g. logs.") var kind: String
    @OptionGroup var data: DataOptions

    func run() throws {
        let store = try profile.open()
        let kind = kind
        let logKind = try store.read { try $0.kind(named: kind) }
        let object = try data.object(for: "\(logKind.name)/")
        let result = try store.write { try $0.append(logKind, data: object) }
        print(result.value.rawValue)
    }
}
