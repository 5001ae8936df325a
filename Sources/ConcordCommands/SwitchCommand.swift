import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

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
