import ArgumentParser
import ConcordEngine
import ConcordKit

/// Every command names itself (`commandName`): without one the parser derives the name from the
/// type with `String(describing:)`, whose runtime lookups cost every concord process ~1–1.5 ms at
/// start (`concord identity show`: 7.6–8.4 ms before, 6.6 after).
struct Concord: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "concord",
        abstract: "Offline-first sync of JSON records through git: signed history, merge policies, roles.",
        discussion: """
        Each profile is a git repository of JSON records. Every write is one commit signed with this \
        device's Ed25519 key (CONCORD_HOME, default ~/.concord). Profile commands take -C <dir> (default: the \
        current directory), before or after the command: concord -C sam sync, concord sync -C sam.

        Exit codes:

        """ + ExitStatus.meanings.map { "  \($0.code)  \($0.meaning)" }.joined(separator: "\n"),
        version: "0.1.0",
        subcommands: [
            IdentityCommand.self, Init.self, Put.self, Get.self, Remove.self, Append.self, List.self, Query.self,
            Import.self, Export.self, Log.self, History.self, Members.self, Share.self, Accept.self, Revoke.self, RoleCommand.self, Devices.self,
            Merge.self, Conflicts.self, Doctor.self, MergeDriverCommand.self,
            RemoteCommand.self, Clone.self, Sync.self, Status.self, Watch.self, Verify.self, ServerCommand.self, Serve.self,
            Profiles.self, Leave.self, Destroy.self, Switch.self, Upgrade.self, Kinds.self,
        ]
    )
}
