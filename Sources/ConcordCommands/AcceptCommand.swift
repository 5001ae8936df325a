import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Accept: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept",
        abstract: "Accept an invitation: clone the profile, check the invitation against it, join as active, and send the acceptance.",
        discussion: """
        Refused, leaving nothing behind, when the invitation expired, was used up or withdrawn, was altered, names another \
        history or key, or the remote cannot be reached to record the acceptance. An open invitation is joined under this \
        device's identity name.
        """)

    @Argument(help: "The invitation text (concord-invitation-1:...), a file holding it, or - to read it from standard input.")
    var invitation: String
    @Argument(help: "The new, empty directory for the profile.") var directory: String
    @Option(name: .customLong("as"), help: "The name to join an open invitation under; it must be this device's identity name.")
    var name: String?
    @Option(help: "Trust this ssh host key fingerprint (SHA256:...) for the remote.") var trustHost: String?
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        var text = invitation
        if invitation == "-" {
            text = String(decoding: readInput(), as: UTF8.self)
        } else if !text.hasPrefix(Invitation.prefix), let file = try? String(contentsOfFile: invitation, encoding: .utf8) {
            text = file
        }
        let parsed = try Invitation(text: text)
        let identity = try loadIdentity()
        if let name, name != identity.member {
            throw ValidationError("this device's identity is \(identity.member), not \(name): members join under their identity's name; "
                                  + "use a CONCORD_HOME whose identity is \(name) ('concord identity new --name \(name) --device DEVICE')")
        }
        if name != nil, parsed.open == nil { throw ValidationError("--as is for open invitations; this one is for \(parsed.member)") }
        let environment = try processEnvironment()
        let (store, sync) = try SetUpFailure.running("concord accept <invitation> \(directory)") {
            try ConcordStore.accept(parsed, into: URL(fileURLWithPath: directory), identity: identity, environment: environment, trustHost: trustHost)
        }
        let role = try store.read { try $0.members() }.first { $0.name == identity.member }?.role ?? parsed.role
        if json {
            try printJSON(["profile": store.info.name, "member": identity.member, "role": role.rawValue, "path": store.directory.path,
                           "head": sync.head])
        } else {
            print("joined \"\(store.info.name)\" as \(identity.member) (\(role.rawValue)) in \(store.directory.path)")
        }
    }
}
