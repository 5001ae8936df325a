import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

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
