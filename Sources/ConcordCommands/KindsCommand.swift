import ArgumentParser
import ConcordKit
import Foundation

/// `concord kinds`: the profile's record kinds, listed, added or changed (Admins) as one signed
/// commit writing `.concord/kinds.json` and the `.gitattributes` generated from it.
struct Kinds: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kinds",
        abstract: "List the profile's record kinds, or add or change one (Admins only).",
        discussion: """
        A kind is a directory of records with a merge policy (lww, delete-wins, or append for a log) and the lowest \
        role that may write it (viewer, user, editor, admin). Adding or changing one is one signed commit of \
        .concord/kinds.json and .gitattributes; run 'concord sync' to publish it. A kind's directory never changes, \
        and a log (append) stays a log: its files differ (one .jsonl per day, against one .json per record).
        """,
        subcommands: [ListKinds.self, AddKind.self, SetKind.self],
        defaultSubcommand: ListKinds.self
    )

    struct ListKinds: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the kinds: name, directory, policy and writers, one per line.")

        @OptionGroup var profile: ProfileOption
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let kinds = try profile.open().kinds.kinds
            if json {
                try printJSON(kinds.map { Kinds.KindOutput($0) })
            } else {
                for kind in kinds {
                    print("\(kind.name)  directory \(kind.directory)  \(kind.policy.rawValue)  writers \(kind.writers.rawValue)")
                }
            }
        }
    }

    struct AddKind: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a kind (Admins only).")

        @OptionGroup var profile: ProfileOption
        @Argument(help: "The kind's name (the record id rules).") var name: String
        @Option(help: "How concurrent changes merge: lww, delete-wins, or append (a log).") var policy: String
        @Option(help: "The lowest role that may write it: viewer, user, editor or admin.") var writers: String
        @Option(help: "The directory of its files (default: the name).") var directory: String?
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let kind = try RecordKind(name: name, directory: directory, policy: try Kinds.policy(policy), writers: try Kinds.role(writers))
            let result = try profile.open().addKinds([kind])
            try Kinds.report(kind, commit: result.commit, json: json, done: "added")
        }
    }

    struct SetKind: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set", abstract: "Change a kind's policy or writers (Admins only; its directory never changes).")

        @OptionGroup var profile: ProfileOption
        @Argument(help: "The kind's name.") var name: String
        @Option(help: "How concurrent changes merge: lww or delete-wins (a log stays append).") var policy: String?
        @Option(help: "The lowest role that may write it: viewer, user, editor or admin.") var writers: String?
        @Option(help: "Refused unless it is the kind's directory: a kind's directory never changes.") var directory: String?
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            guard policy != nil || writers != nil || directory != nil else {
                throw ValidationError("give --policy, --writers or both: what to change about kind \"\(name)\"")
            }
            let result = try profile.open().setKind(name: name, policy: try policy.map(Kinds.policy), writers: try writers.map(Kinds.role),
                                                    directory: directory)
            try Kinds.report(result.value, commit: result.commit, json: json, done: "changed")
        }
    }

    /// `kind` as `kinds list --json` gives it, and `kinds add` or `kinds set` with the commit that did it.
    struct KindOutput: Encodable {
        let name: String, directory: String, policy: String, writers: String
        /// `kinds add` and `kinds set`: the commit (null: unchanged); left out by `kinds list`.
        let commit: OrNull<String>?

        init(_ kind: RecordKind, commit: OrNull<String>? = nil) {
            (name, directory, policy, writers, self.commit) = (kind.name, kind.directory, kind.policy.rawValue, kind.writers.rawValue, commit)
        }
    }

    /// Prints what `kinds add` or `kinds set` did.
    static func report(_ kind: RecordKind, commit: String?, json: Bool, done: String) throws {
        if json {
            try printJSON(KindOutput(kind, commit: OrNull(wrappedValue: commit)))
        } else if let commit {
            print("\(done) kind \(kind.name) (directory \(kind.directory), \(kind.policy.rawValue), writers \(kind.writers.rawValue)) "
                  + "in commit \(commit.prefix(7)); run 'concord sync' to publish it")
        } else {
            print("kind \(kind.name) is already \(kind.policy.rawValue), writers \(kind.writers.rawValue): unchanged")
        }
    }

    /// `--policy`'s value; a usage error naming the choices otherwise.
    static func policy(_ text: String) throws -> MergePolicy {
        guard let policy = MergePolicy(rawValue: text) else {
            throw ValidationError("--policy must be lww, delete-wins or append, not \"\(text)\"")
        }
        return policy
    }

    /// `--writers`' value; a usage error naming the choices otherwise.
    static func role(_ text: String) throws -> Role {
        guard let role = Role(parsing: text) else {
            throw ValidationError("--writers must be viewer, user, editor or admin, not \"\(text)\"")
        }
        return role
    }
}
