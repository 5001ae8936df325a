import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Profiles: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profiles",
        abstract: "List the profiles on this device: name, path, your role, remote, last sync and access.",
        discussion: "Access is active, key not registered (a member, but this device's key is not one of yours there yet: "
            + "writes are refused until an Admin adds it), pending (invited, not accepted), removed (an Admin revoked you: the copy "
            + "was deleted), not a member, or missing (the directory was moved or deleted outside concord). "
            + "Each identity ($CONCORD_HOME) has its own list.")

    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let environment = try processEnvironment()
        let identity = try loadIdentity()
        let summaries = ProfileRegistry(home: environment.home).summaries(for: identity, environment: environment)
        if json {
            try printJSON(summaries.map { summary -> [String: String?] in
                ["name": summary.name, "path": summary.path, "id": summary.id, "role": summary.role?.rawValue, "remote": summary.remote,
                 "lastSync": summary.lastSync, "access": summary.access, "note": summary.note]
            })
            return
        }
        if summaries.isEmpty { print("no profiles on this device for \(identity.member): 'concord init', 'concord clone' or 'concord accept' adds one") }
        for summary in summaries {
            // A copy that is gone has no role, remote or sync to show: only why.
            if ["missing", "removed"].contains(summary.access) {
                print("\(summary.name)  \(summary.path)  \(summary.access)" + (summary.note.map { " (\($0))" } ?? ""))
                continue
            }
            let role = summary.role.map(\.rawValue) ?? "-"
            let synced = summary.lastSync.map { "synced \($0)" } ?? "never synced"
            print("\(summary.name)  \(summary.path)  \(role)  \(summary.access)  \(summary.remote ?? "no remote")  \(synced)"
                  + (summary.note.map { "  (\($0))" } ?? "")
                  + (summary.access == "key not registered" ? ": \(keyRegistrationAdvice(identity.member))" : ""))
        }
    }
}

struct Leave: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Leave a profile: record your departure (unless you are an Admin), then delete this device's copy.",
        discussion: """
            When you are not an Admin and the remote answers, your member file is first marked as left (revoked by \
            yourself, no device keys) and synced, so the others see you left and your other devices remove their copies. \
            Offline, the copy is still deleted (unsent edits are saved as a dump under $CONCORD_HOME/saved/) and the \
            departure is not recorded: ask an Admin to revoke you. An Admin's membership stays: hand over and revoke \
            yourself, or 'concord destroy'. Data already synced to other people's devices is not recalled.
            """)

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote to record the departure on.") var remote = "origin"
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let store = try profile.open()
        let identity = store.identity
        let name = store.info.name, path = store.directory.path
        let mine = try store.read { try $0.members() }.first { $0.name == identity.member }
        let hasRemote = try store.read { try $0.remotes() }.contains { $0.name == remote }
        var departure: String
        switch (mine?.status, mine?.role) {
        case (.active?, .admin?):
            departure = "not recorded: \(identity.member) is an Admin of \"\(name)\" (name another Admin and revoke yourself, or 'concord destroy')"
        case (.active?, _) where hasRemote:
            // Synced first, so that the departure goes on top of the remote's main: a merge after it would be
            // signed by a member who left, and no device accepts that.
            do {
                _ = try store.sync(remote: remote)
                try store.leave()
                _ = try store.sync(remote: remote)
                departure = "recorded on \(remote)"
            } catch ConcordError.accessRemoved {
                departure = "not needed: access had already been removed"
            } catch ConcordError.offline(_, let reason, _) {
                departure = "not recorded: \(remote) could not be reached (\(reason)); ask an Admin to revoke \(identity.member)"
            } catch {
                departure = "not recorded: \(remote) did not take it (\(describe(error))); ask an Admin to revoke \(identity.member)"
            }
        case (.active?, _):
            departure = "not recorded: the profile has no remote \(remote)"
        default:
            departure = "not needed: \(identity.member) is not an active member"
        }
        let saved = try store.removeLocalCopy(unsentTo: hasRemote ? remote : "")
        if json {
            try printJSON(["profile": name, "path": path, "departure": departure, "saved": saved?.path] as [String: String?])
        } else {
            print("left \"\(name)\": departure \(departure); this device's copy at \(path) was deleted"
                  + (saved.map { "; unsent edits saved in \($0.path)" } ?? ""))
        }
    }
}

struct Switch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch",
        abstract: "Hand this device to another member of the profile (a shared tablet between caregivers), or show who acts on it.",
        discussion: """
            Later writes (put, rm, append, import) name the acting member (Concord-Actor, updatedBy, a log entry's by) \
            and are signed by this device's key: the audit shows both. They may do what BOTH the acting member's and \
            this device owner's roles allow, records and logs only; membership commands still act as the owner. Only \
            active members can be switched to. The switch itself is appended to the profile's log kind. \
            'concord switch <your own name>' hands the device back.
            """)

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The member to act as from now on; none: show who acts.") var member: String?
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let store = try profile.open()
        let identity = store.identity
        var logged: String?
        if let member { logged = try store.switchActing(to: member, logged: true) }
        let acting = try store.actingMember() ?? identity.owner
        if json {
            try printJSON(["acting": acting, "owner": identity.owner, "device": identity.device, "logged": logged] as [String: String?])
        } else if member == nil {
            print(acting == identity.owner ? "\(acting) acts on this device (its owner)"
                  : "\(acting) acts on this device (\(identity.owner)'s \(identity.device)); 'concord switch \(identity.owner)' hands it back")
        } else {
            print("\(acting) now acts on \(identity.owner)'s \(identity.device)" + (logged.map { "; the switch is logged as \($0)" } ?? ""))
        }
    }
}

struct Destroy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "destroy",
        abstract: "Delete a profile everywhere concord can (Admin): every remote's repository, then this device's copy.",
        discussion: """
            Signs a deletion notice with this device's key and leaves it where each remote's repository was: a path \
            remote's directory keeps only the notice; a concord server deletes the repository (through concord serve) \
            and keeps the notice for the members' devices. Every other device checks the notice on its next sync \
            (signed by a key of an active Admin in the membership it holds, for this profile and history), removes its \
            copy and reports "profile deleted" (exit 4). A remote that cannot be reached, or a stock ssh + git server \
            (it cannot delete), is reported, and this device's copy is kept so that running destroy again finishes \
            the job; 'concord remote remove NAME' first for a remote you will delete by hand. Data already synced to \
            other people's devices, and their saved exports, are not recalled.
            """)

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Confirm: delete the profile and its whole history everywhere.") var yes = false
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints: what each remote did (`remote`, `what`) or why not (`remote`, `error`).
    struct Output: Encodable {
        let profile: String, path: String, copyDeleted: Bool, deleted: [[String: String]], failed: [[String: String]]
    }

    func run() throws {
        let store = try profile.open()
        let name = store.info.name, path = store.directory.path
        guard yes else {
            throw ValidationError("destroy deletes \"\(name)\" and its history on every remote and on this device: run it again with --yes")
        }
        let report = try store.destroy()
        let (deleted, failures, copyDeleted) = (report.deleted, report.failed, report.copyDeleted)
        if json {
            try printJSON(Output(profile: name, path: path, copyDeleted: copyDeleted,
                                 deleted: deleted.map { ["remote": $0.remote, "what": $0.what] },
                                 failed: failures.map { ["remote": $0.remote, "error": describe($0.error)] }))
        } else {
            for item in deleted { print("\(item.remote): \(item.what)") }
            for failure in failures { print("\(failure.remote): NOT deleted: \(describe(failure.error))") }
            print(copyDeleted ? "deleted \"\(name)\": this device's copy at \(path) is gone; other devices remove theirs on their next sync"
                  : "\"\(name)\" is not deleted everywhere: this device's copy at \(path) is kept; run 'concord destroy --yes' again "
                    + "once \(failures.map(\.remote).joined(separator: ", ")) can be reached (or remove a remote you will delete by hand)")
        }
        if let failure = failures.first?.error { throw ExitCode(ExitStatus.code(for: failure)) }
    }
}

struct Upgrade: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Move the profile to this concord's data format in one signed commit (Admins only).",
        discussion: """
            Format 5 adds key proofs: from the upgrade on, every key added to a member file needs its holder's proof of \
            possession, unless an Admin adds it for another member (docs/security.md, "A key belongs to one member"). \
            Format 6 lets an imported log entry keep who first wrote it, when and on which device (its "origin"). \
            Nothing else changes. Run 'concord sync' afterwards to publish it; every device must then run a concord that \
            reads the new format (an older one refuses the profile with "upgrade concord"). Running it again does nothing.
            """)

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        let from: Int, to: Int
        @OrNull var commit: String?
    }

    func run() throws {
        let upgrade = try Maintenance.upgradeFormat(at: profile.url, environment: try processEnvironment(), as: try loadIdentity())
        if json {
            try printJSON(Output(from: upgrade.from, to: upgrade.to, commit: upgrade.commit))
        } else if upgrade.commit == nil {
            print("already format \(upgrade.to): nothing to do")
        } else {
            print("upgraded from format \(upgrade.from) to \(upgrade.to) (commit \(upgrade.commit?.prefix(7) ?? "")); run 'concord sync' to publish it")
        }
    }
}
