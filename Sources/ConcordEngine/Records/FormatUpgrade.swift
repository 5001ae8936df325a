import ConcordModel
import ConcordTrust
import Foundation

/// What `Profile.upgrade` did: the format the profile had, the one it has now, and the commit that
/// moved it (nil when it already had this build's format).
package struct FormatUpgrade: Sendable {
    /// The format version before.
    public let from: Int
    /// The format version now.
    public let to: Int
    /// The upgrade's commit (hex), nil when there was nothing to do.
    public let commit: String?
}

extension Records {
    /// Moves this profile to the data format this build writes (`concordFormatVersion`) in ONE signed
    /// commit of `.concord/profile.json`, an Admin's. Nothing else changes: the files of the older
    /// format read as they are (a format 4 profile is a format 5 one with no key proofs), and from that
    /// commit on the newer format's rules apply (from 5: keys added need their holder's proof). A
    /// concord that reads only older formats then refuses the profile with "upgrade concord".
    /// Running it again does nothing.
    public func upgradeFormat(as identity: Identity) throws -> FormatUpgrade {
        let info = profile.info
        let from = info.formatVersion
        guard from < concordFormatVersion else { return FormatUpgrade(from: from, to: from, commit: nil) }
        let result = try write(as: identity, asOwner: true) { transaction in
            try profile.members.authorizeAdmin(identity, action: "upgrading the data format (which an Admin does)")
            let upgraded = ProfileInfo(id: info.id, name: info.name, formatVersion: concordFormatVersion, createdAt: info.createdAt)
            transaction.stage(ProfilePaths.profile, upgraded.json.canonicalBytes(), RecordChange(kind: "profile", id: "profile", action: .updated))
        }
        return FormatUpgrade(from: from, to: concordFormatVersion, commit: result.commit)
    }
}
