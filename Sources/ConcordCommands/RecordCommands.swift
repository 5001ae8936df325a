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

/// Prints what a write did: one line per change and the commit, or `unchanged`.
func report<Value>(_ result: WriteResult<Value>, unchanged: String) {
    guard let commit = result.commit else {
        if !unchanged.isEmpty { print(unchanged) }
        return
    }
    for change in result.changes.prefix(20) { print("\(change.reference): \(change.action.rawValue)") }
    if result.changes.count > 20 { print("... and \(result.changes.count - 20) more") }
    print("commit \(commit.prefix(7))")
}
