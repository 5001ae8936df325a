import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.ProcessMemory
import Foundation
import Synchronization

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
