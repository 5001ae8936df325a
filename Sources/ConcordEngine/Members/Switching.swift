import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// Caregiver switching on a shared device (`concord switch`): which member acts on this device for
/// this profile. Kept in the repository's `.git/concord/acting` (this device's alone, never synced);
/// absent, the device's owner acts. Records and log entries written afterwards name the acting
/// member (`Concord-Actor`, `updatedBy`, `by`) while the owner's device key signs them; the
/// validity rule judges such a commit by the lower of the two roles and lets it change records
/// and logs only (docs/security.md). Membership commands always act as the owner.
extension Members {
    /// `.git/concord/acting`: the member acting on this device, when it is not the owner.
    var actingFile: String { repository.gitDirectory + "concord/acting" }

    /// The member acting on this device, or nil when it is the device's owner.
    public func actingMember() -> String? {
        guard let data = FileManager.default.contents(atPath: actingFile) else { return nil }
        let name = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }

    /// `identity` writing as the member acting on this device.
    func acting(_ identity: Identity) throws -> Identity {
        guard let member = actingMember(), member != identity.owner else { return identity }
        return identity.acting(as: member)
    }

    /// Makes `member` the one acting on this device (the owner: back to the owner), after checking
    /// that the owner and `member` are active members; with `logged` (the CLI's `concord switch`
    /// on a template's profile), the switch is appended, as the owner, to the profile's first log
    /// kind (when it has one and the owner may write it). Returns the log entry's id, if one was
    /// written. A store never logs it into a kind (`ConcordStore.switchActing`: an app's log kind
    /// has a shape of its own).
    @discardableResult
    public func switchActing(to member: String, as owner: Identity, logged: Bool = true) throws -> String? {
        let owner = owner.acting(as: owner.owner)
        _ = try active(owner)
        let previous = actingMember() ?? owner.owner
        if member != owner.owner {
            _ = try active(owner.acting(as: member))
        }
        var entry: String?
        if logged, let log = profile.kinds.kinds.first(where: { $0.policy == .append }), previous != member,
           (try? authorize(owner, toWrite: log)) != nil {
            entry = try profile.records.write(as: owner, asOwner: true) { transaction in
                try transaction.append(log.name, data: ["event": .string("switch"), "from": .string(previous), "to": .string(member)])
            }.value.rawValue
        }
        do {
            try FileManager.default.createDirectory(atPath: repository.gitDirectory + "concord", withIntermediateDirectories: true)
            if member == owner.owner {
                if FileManager.default.fileExists(atPath: actingFile) { try FileManager.default.removeItem(atPath: actingFile) }
            } else {
                try Data((member + "\n").utf8).write(to: URL(fileURLWithPath: actingFile), options: .atomic)
            }
        } catch {
            throw ConcordError.io(.write, path: actingFile, "could not write \(actingFile): \(error.localizedDescription)")
        }
        return entry
    }
}
