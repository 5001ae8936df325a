import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.ProcessMemory
import Foundation
import Synchronization

/// Exit code for "the remote could not be reached" (documented in docs/cli.md).
let offlineExitCode: Int32 = 3

struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote", abstract: "Manage the bare repositories this profile syncs with.",
        subcommands: [Add.self, ListRemotes.self, RemoveRemote.self, Trust.self, Restore.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a remote: a directory path or ssh://user@host[:port]/path.git.")
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name, e.g. origin.") var name: String
        @Argument(help: "A path to a bare repository, or ssh://user@host[:port]/path.git.") var url: String

        func run() throws {
            try profile.open().addRemote(name, url: url)
            print("added remote \(name)")
        }
    }

    struct ListRemotes: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List remotes and their URLs.")
        @OptionGroup var profile: ProfileOption
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let remotes = try profile.open().read { try $0.remotes() }
            if json {
                try printJSON(remotes.map { ["name": $0.name, "url": $0.url] })
            } else {
                for remote in remotes { print("\(remote.name)  \(remote.url)") }
            }
        }
    }

    struct RemoveRemote: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a remote (nothing on the server changes).")
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name.") var name: String

        func run() throws {
            try profile.open().removeRemote(name)
            print("removed remote \(name)")
        }
    }

    struct Trust: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "trust",
            abstract: "Connect to an ssh remote and trust the host key it presents ($CONCORD_HOME/known_hosts).")
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name.") var name: String

        func run() throws {
            let fingerprint = try profile.open().trustRemote(name)
            print("trusted the host key of \(name): \(fingerprint)")
        }
    }
}

extension RemoteCommand {
    struct Restore: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Put back a remote's main that devices refuse (Admins only).",
            discussion: """
                For a path remote someone pushed a commit to with plain git, or moved back or rewrote past what this \
                device fetched, so that every sync stops with exit 5. Fetches the remote's main, checks it, merges in \
                the newest commit of it the rule accepts (a rolled-back or rewritten main whole, as a side of this \
                device's line), and moves the remote's main to this device's verified main (a compare-and-swap against \
                the damaged tip), keeping the damaged tip on the remote under refs/concord/damaged/<time>. Exit 0 with \
                nothing done when the remote's main passes the rule and holds what this device fetched.
                """)
        @OptionGroup var profile: ProfileOption
        @Argument(help: "The remote's name.") var name = "origin"
        @Flag(help: "Print the result as JSON.") var json = false

        /// What `--json` prints: the restore's report, every field null when there was nothing to restore.
        struct Output: Encodable {
            let remote: String, restored: Bool
            @OrNull var damagedTip: String?
            @OrNull var keptAs: String?
            @OrNull var refusal: String?
            @OrNull var merged: String?
            @OrNull var main: String?
        }

        func run() throws {
            let report: RemoteRestoreReport?
            do {
                report = try profile.open().restoreRemote(name)
            } catch where json {
                try printJSON(FailureOutput(error))
                throw error
            }
            if json {
                try printJSON(Output(remote: name, restored: report != nil, damagedTip: report?.damagedTip, keptAs: report?.keptAs,
                                     refusal: report?.refusal, merged: report?.merged, main: report?.restoredTo))
            } else if let report {
                print("restored \(name)'s main to \(report.restoredTo) (this device's verified main"
                      + (report.merged.map { ", with \($0) from the damaged main merged in" } ?? "") + ")")
                print("the damaged main \(report.damagedTip) is kept on \(name) as \(report.keptAs) (refused: \(report.refusal))")
                print("every device syncs again as usual")
            } else {
                print("\(name)'s main passes the rule: nothing to restore")
            }
        }
    }
}

struct Clone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Set up a profile on this device from a remote (a path or ssh URL).")

    @Argument(help: "A path to a bare repository, or ssh://user@host[:port]/path.git.") var url: String
    @Argument(help: "The directory to create.") var directory: String
    @Option(help: ArgumentHelp("Trust an ssh server presenting this host key fingerprint.", valueName: "SHA256:...")) var trustHost: String?
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        let path: String, id: String, name: String, records: Int
    }

    func run() throws {
        // One process, one clone: no memory handed back only to be faulted in again (never in another program's process).
        if CommandContext.current.ownsProcess { ProcessMemory.keepFreedMemory() }
        let target = URL(fileURLWithPath: directory).standardizedFileURL
        let interruption = CloneInterruption(target)
        defer { interruption?.cancel() }
        let identity = try loadIdentity(), environment = try processEnvironment()
        let store = try SetUpFailure.running("concord clone \(url) \(directory)") {
            try ConcordStore.clone(url: url, into: URL(fileURLWithPath: directory), identity: identity, environment: environment,
                                   trustHost: trustHost, keepingAnyCopy: true)
        }
        interruption?.cancel()   // whole from here on, whatever signal comes
        let records = store.clonedRecords
        if json {
            try printJSON(Output(path: store.directory.path, id: store.info.id, name: store.info.name, records: records))
        } else {
            print("cloned \"\(store.info.name)\" into \(store.directory.path): \(records) records")
        }
    }
}

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Fetch, check, merge with the policies, and push (never forced).",
        discussion: "Exit 3 when the remote is unreachable, 4 when it refuses this device or the push, 5 when it holds a commit that breaks the format (nothing local changes).")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote to sync with.") var remote = "origin"
    @Flag(help: "Print the result as JSON.") var json = false
    @Flag(help: "When an admin revoked this device's member, keep the local copy (default: delete it).") var keep = false

    func run() throws {
        let report: SyncReport
        let member: String
        do {
            let store = try profile.open()
            member = store.identity.member
            report = try store.sync(remote: remote, keepCopy: keep)
        } catch where json {
            // Scripts get a JSON error object on stdout as well as the line on stderr, whatever failed.
            try printJSON(FailureOutput(error))
            throw error
        }
        for warning in report.warnings { writeError("concord: warning: \(warning)\n") }
        if json {
            try printJSON(SyncOutput(report))
        } else {
            print(syncLine(report))
            for edit in report.yours { print(ConflictPhrasing.yours(edit, utc: false)) }
            for edit in report.lost where !report.yours.contains(edit) { print("lost: " + ConflictPhrasing.sentence(edit, utc: false)) }
            for change in report.leftOut { print("left out: " + leftOutSentence(change)) }
            for name in report.contested { print("contested: " + contestedSentence(name)) }
            for decision in report.fallen { print("does not count: " + decision.line(for: member)) }
        }
        try failOnUnresolved(report.unresolved)
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Ahead/behind a remote (as of the last fetch) and the last successful sync.")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote.") var remote = "origin"
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        let remote: String, url: String, ahead: Int, behind: Int
        @OrNull var lastSync: String?
    }

    func run() throws {
        let remote = remote
        let status = try profile.open().read { try $0.syncStatus(remote: remote) }
        if json {
            try printJSON(Output(remote: status.remote, url: status.url, ahead: status.ahead, behind: status.behind, lastSync: status.lastSync))
        } else {
            print("remote \(status.remote): \(status.url)")
            print("ahead \(status.ahead), behind \(status.behind) (as of the last fetch)")
            print("last sync: \(status.lastSync ?? "never")")
        }
    }
}

/// A change a merge left out because its author lost the rights to make it concurrently.
func leftOutSentence(_ change: LeftOutChange) -> String {
    let cause = switch change.cause {
    case .rightsLowered: "the revocation or demotion of \(change.member) made concurrently"
    case .keyRemoved(let fingerprint): "the removal of the key that signed it (\(fingerprint)) on the main line"
    case .kindsChanged: "the kinds where it lands, which do not let \(change.member) write it"
    }
    return "\(change.path): \(change.member)'s change (commit \(change.commit.prefix(7))) lost to \(cause); it stays in history "
        + "(concord history \(change.path))"
}

/// A member two Admins added at once with different keys.
func contestedSentence(_ name: String) -> String {
    "\(name) was added on two devices at once with different keys; neither is admitted (\(name) is left revoked) — an Admin "
        + "adds or invites \(name) again"
}

func syncLine(_ report: SyncReport) -> String {
    "synced with \(report.remote): received \(report.received) commits, sent \(report.sent), "
        + "\(report.changedFiles.count) files changed, \(report.resolved.count) conflicts resolved"
}

func failOnUnresolved(_ unresolved: [UnresolvedFile]) throws {
    guard !unresolved.isEmpty else { return }
    for file in unresolved {
        let saved = file.savedAs.map { "; the other version is saved in \($0)" } ?? ""
        writeError("concord: unresolved: \(file.path): \(file.reason)\(saved) — fix \(file.path), then commit it with concord put\n")
    }
    throw ExitCode(ExitStatus.failure)
}

/// Ctrl-C or SIGTERM during a clone: what the clone wrote is removed, as when it fails, and the
/// process exits (130 or 143). Only for a target that was missing or empty (anything else is
/// refused by the clone, and is not touched here). A clone killed outright (SIGKILL) leaves
/// `.git/concord/cloning` naming its pid: the next clone into the directory removes what it left.
///
/// The signal is handled on another thread while the clone goes on: the handler and the clone's
/// end take one lock, so a clone that finished is left whole (the signal then ends nothing), and
/// one that did not is removed until nothing of it comes back (the clone may still be writing its
/// files) before the process exits, without the clone ever finishing in between.
final class CloneInterruption {
    private let sources: [Int32: any DispatchSourceSignal]
    /// Whether the clone is whole; a signal's handler holds it until the process exits.
    private let finished = Finished()

    private final class Finished: Sendable {
        let flag = Mutex(false)
    }

    init?(_ target: URL) {
        guard CommandContext.current.ownsProcess else { return nil }   // a run in another program's process
        let manager = FileManager.default
        let existed = manager.fileExists(atPath: target.path)
        if existed, !((try? manager.contentsOfDirectory(atPath: target.path))?.isEmpty ?? false) { return nil }
        sources = Dictionary(uniqueKeysWithValues: [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            return (number, DispatchSource.makeSignalSource(signal: number, queue: .global()))
        })
        for (number, source) in sources {
            source.setEventHandler { [finished] in
                finished.flag.withLock { finished in   // held until the process exits: the clone cannot finish meanwhile
                    guard !finished else { return }
                    var quiet = 0
                    while quiet < 3 {
                        Maintenance.removeUnfinishedClone(at: target, madeDirectory: !existed)
                        usleep(2_000)
                        let left = (try? manager.contentsOfDirectory(atPath: target.path)) ?? []
                        quiet = left.isEmpty ? quiet + 1 : 0
                    }
                    writeError("concord: clone interrupted; nothing was left in \(target.path)\n")
                    _exit(128 + number)
                }
            }
            source.resume()
        }
    }

    /// The clone is whole: a signal from now on ends the process as usual, and removes nothing.
    func cancel() {
        finished.flag.withLock { $0 = true }
        for source in sources.values { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
