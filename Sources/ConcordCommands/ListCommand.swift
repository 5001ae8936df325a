import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List live records (one <kind>/<id> per line); for log kinds, their entries.")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "Only this kind.") var kind: String?
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let kind = kind
        let listing = try profile.open().read { try $0.indexedList(kind: kind) }
        warn(listing.warnings)
        if json {
            try printJSON(listing.items.map { ["kind": $0.kind, "id": $0.id] })
        } else {
            for item in listing.items { print(item.reference) }
        }
    }
}
