import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a profile: a git repository of records whose first admin is you.")

    @Argument(help: "The directory to create the profile in (with --bare: the bare repository to create).") var directory: String
    @Option(help: "The profile's display name.") var name: String?
    @Flag(help: "Create a bare repository for devices to sync through instead of a profile.") var bare = false
    @Option(help: "Kinds to start with: blank, aac, screenplay, recipes, sessions, personal.") var template = "blank"
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        guard Template(rawValue: template) != nil else { throw ValidationError(ConcordError.unknownTemplate(template).errorDescription!) }
        if !bare && name == nil { throw ValidationError("give the profile a name with --name NAME") }
    }

    /// What `--json` prints: the new profile, or (`--bare`) the new bare repository.
    struct Output: Encodable {
        let path: String, id: String, name: String, kinds: [String]
    }

    struct Bare: Encodable {
        let path: String, bare: Bool
    }

    func run() throws {
        if bare {
            try Maintenance.createBareRemote(at: URL(fileURLWithPath: directory))
            if json { try printJSON(Bare(path: URL(fileURLWithPath: directory).standardizedFileURL.path, bare: true)) }
            else { print("created bare repository \(directory): add it with 'concord remote add origin \(directory)'") }
            return
        }
        let store = try ConcordStore.create(
            at: URL(fileURLWithPath: directory), name: name ?? "", template: Template(rawValue: template) ?? .blank,
            identity: try loadIdentity(), environment: try processEnvironment())
        if json {
            try printJSON(Output(path: store.directory.path, id: store.info.id, name: store.info.name, kinds: store.kinds.kinds.map(\.name)))
        } else {
            let kinds = store.kinds.kinds.map(\.name).joined(separator: ", ")
            print("created profile \"\(store.info.name)\" in \(store.directory.path)" + (kinds.isEmpty ? "" : " (kinds: \(kinds))"))
        }
    }
}
