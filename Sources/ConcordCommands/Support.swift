import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

/// Exit codes, documented in docs/cli.md (its table has `meanings`' words).
enum ExitStatus {
    /// What each exit code means, as `concord --help` lists them.
    static let meanings: [(code: Int32, meaning: String)] = [
        (0, "success"),
        (failure, "error: one line on stderr, 'concord: error: <what went wrong>: <what to do>'; nothing was changed"),
        (usage, "usage error: a missing or unknown argument or option, with the usage text"),
        (offlineExitCode, "offline: the remote could not be reached (missing path, connection refused, host down, DNS, nothing "
            + "received for CONCORD_NETWORK_TIMEOUT seconds); local commits are kept"),
        (refused, "refused: this device's member was revoked (\"access removed\"), an Admin deleted the profile (\"profile "
            + "deleted\", after this device checked their signed deletion notice), or the server turned this device away (an "
            + "access rule such as gitolite's \"W … DENIED\" or concord serve's, a pre-receive hook such as a concord server's "
            + "validity check, a rejected push); its message is on the line; local commits are kept"),
        (invalidCommit, "invalid commit: the remote holds a commit that breaks the format (docs/sync.md, \"What every fetched "
            + "commit must pass\") or the access rule (not signed by a member active just before it, or changing what its "
            + "signer's role may not); one line names the commit, the signer and the rule ('a1b2c3d by vera@tablet changes "
            + "vocabulary/puzzle: Viewers may not write vocabulary'); nothing local changed"),
    ]

    static let failure: Int32 = 1
    static let usage: Int32 = 2
    /// The remote refused this device (its server said no, e.g. gitolite's "W … DENIED").
    static let refused: Int32 = 4
    /// A commit breaks the structural or the access rule; nothing local changed.
    static let invalidCommit: Int32 = 5

    /// The exit code of a failed command, as main gives it for any error.
    static func code(for error: Error) -> Int32 {
        switch error {
        case let error as ConcordError: code(for: error)
        case let failure as SetUpFailure: code(for: failure.error)
        case is ValidationError: usage
        default: failure
        }
    }

    /// The exit code of a failed command whose error is the library's own.
    static func code(for error: ConcordError) -> Int32 {
        switch error {
        case .offline: return offlineExitCode
        case .invalidCommit, .unauthorizedCommit, .remoteRewritten, .mainlineBroken, .unpublishable: return invalidCommit
        case .pushRejected, .refused, .accessRemoved, .profileDeleted: return refused
        default: return failure
        }
    }
}

/// One line describing an error for people.
func describe(_ error: Error) -> String {
    let text = (error as? ConcordError)?.cliMessage ?? (error as? SetUpFailure).map { $0.error.cliMessage(settingUp: $0.command) }
        ?? (error as? LocalizedError)?.errorDescription ?? "\(error)"
    return text.replacingOccurrences(of: "\n", with: " ")
}

/// `-C <dir>`: the profile a command works on.
struct ProfileOption: ParsableArguments {
    @Option(name: .customShort("C"), help: ArgumentHelp("The profile directory.", valueName: "dir"))
    var directory: String = "."

    var url: URL { URL(fileURLWithPath: directory) }

    /// The profile opened as this device's identity: a store, as an app opens it, except that
    /// the tool reads a copy whatever its members (as it always has: a device cloned before its
    /// key was added, an invitee before accepting); the engine refuses a non-member's writes. A
    /// command makes one call at a time, so its syncs run on the store's one engine (`watch`,
    /// whose sync engine runs beside the command's thread, passes `syncingOnItsQueue: false`).
    func open(syncingOnItsQueue: Bool = true) throws -> ConcordStore {
        try ConcordStore.open(at: url, identity: try loadIdentity(), environment: try processEnvironment(), checkingMembership: false,
                              syncingOnItsQueue: syncingOnItsQueue)
    }

    /// `open()`, with `reference` (`kind/id`) read as the profile's kind and the id.
    func open(record reference: String) throws -> (store: ConcordStore, kind: RecordKind, id: RecordID) {
        let store = try open()
        let (kind, id) = try store.read { try $0.reference(reference) }
        return (store, kind, id)
    }
}

/// `--json JSON | --file PATH`: a JSON object given inline or in a file.
struct DataOptions: ParsableArguments {
    @Option(name: .customLong("json"), help: ArgumentHelp("The record's data as a JSON object.", valueName: "json"))
    var inline: String?

    @Option(name: .long, help: ArgumentHelp("A file holding the record's data as a JSON object.", valueName: "path"))
    var file: String?

    func validate() throws {
        if (inline == nil) == (file == nil) { throw ValidationError("give the data with exactly one of --json JSON or --file PATH") }
    }

    /// The parsed object, with errors naming where the JSON came from; `target` (`kind/id`, or
    /// `kind/` for a log entry) names what it is for when it is too large for any record.
    func object(for target: String) throws -> [String: JSONValue] {
        let (bytes, source): ([UInt8], String)
        if let inline {
            (bytes, source) = (Array(inline.utf8), "--json")
        } else if let file {
            // At most one byte more than a record may hold is read: a huge file is refused unread.
            guard let handle = FileHandle(forReadingAtPath: file), let data = try? handle.read(upToCount: maxRecordBytes + 1) ?? Data() else {
                throw ConcordError.io(.read, path: file, "cannot read \(file): no such file or not readable")
            }
            try? handle.close()
            (bytes, source) = (Array(data), file)
        } else {
            throw ValidationError("give the data with --json JSON or --file PATH")
        }
        // Data this large cannot fit in a record: refused before it is parsed (or, from a file, read whole).
        guard bytes.count <= maxRecordBytes else {
            let size = file.flatMap { (try? FileManager.default.attributesOfItem(atPath: $0)[.size]) as? Int } ?? bytes.count
            throw ConcordError.recordTooLarge(target, size: max(size, bytes.count))
        }
        return try JSONInput.object(bytes, source: source)
    }
}

/// Writes a JSON value (canonical form) to standard output.
private func printJSON(_ value: JSONValue) {
    writeOutput(Data(value.canonicalBytes()))
}

/// Writes `value` as JSON (canonical form, as `JSONValueEncoder` encodes it) to standard output:
/// what a command prints for `--json` is a `Codable` value of its own.
func printJSON<Output: Encodable>(_ value: Output) throws {
    printJSON(try JSONValueEncoder().encode(value))
}

/// A field of a command's JSON that is `null` when it has no value (an optional is otherwise left out).
@propertyWrapper
struct OrNull<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

/// What a command whose `--json` output a script reads prints when it fails: the error's line and its exit code.
struct FailureOutput: Encodable {
    let error: String
    let exitCode: Int32

    init(_ error: Error) { (self.error, self.exitCode) = (describe(error), ExitStatus.code(for: error)) }
}

/// Prints a line for people to standard error, leaving standard output to what a script keeps (`share`'s invitation).
func explain(_ line: String) {
    writeError("\(line)\n")
}

/// Prints warnings to standard error, one line each.
func warn(_ lines: [String]) {
    for line in lines { writeError("concord: warning: \(line)\n") }
}

/// The identity of this device, from CONCORD_HOME.
func loadIdentity() throws -> Identity {
    let home = try runEnvironment().home
    closeToOthers(home.path)
    return try Identity.load(from: home)
}

/// The run's environment (`CommandContext.current`: CONCORD_HOME, CONCORD_CLOCK, …); `driverExecutable` as given.
func runEnvironment(driverExecutable: String? = nil) throws -> ConcordEnvironment {
    try ConcordEnvironment.from(variables: CommandContext.current.environment, driverExecutable: driverExecutable)
}

/// The run's environment, with the concord binary as the merge driver plain git should run.
func processEnvironment() throws -> ConcordEnvironment {
    let environment = try runEnvironment(driverExecutable: currentExecutable())
    closeToOthers(environment.home.path)
    return environment
}

/// Makes the directory at `path` (CONCORD_HOME, a profile's top) its owner's alone (0700) when
/// others may enter it: what concord wrote before it set its umask (main.swift) is 0644 in 0755
/// directories, and closing the top closes everything in it. Best effort: one that is not ours stays as it is.
func closeToOthers(_ path: String) {
    var info = stat()
    if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_mode & 0o077 != 0 { chmod(path, 0o700) }
}

/// The absolute path of the concord binary: the run's (`CommandContext.executable`), else this
/// process's (Linux's /proc/self/exe; elsewhere, and built with `-DCONCORD_PORTABLE`, Foundation's).
func currentExecutable() -> String? {
    if let executable = CommandContext.current.executable { return executable }
    #if os(Linux) && !CONCORD_PORTABLE
    if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return resolved }
    #endif
    return Bundle.main.executablePath
}
