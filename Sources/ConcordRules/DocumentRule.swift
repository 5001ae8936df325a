import ConcordModel

/// The structural rule for a profile's own documents (docs/security.md, "Structural check"), as a
/// pure function of a changed file's bytes: what `IncomingCheck` (ConcordKit) asks of each
/// `profile.json`, member file, open invitation and `.gitattributes` a fetched commit writes, once it
/// has read them within their size limits. Records and logs are judged by `ProfilePathRules`.
package enum DocumentRule {
    /// Why `bytes`, the new content of profile document `file` at `path`, breaks the structural rule
    /// (nil: it does not). `before`: the same file's bytes in the commit's first parent, when it had
    /// one that could be read (asked of `profile.json` only); `kinds`: the commit's kinds table;
    /// `profileID`: the profile's id (nil while cloning), set from the first `profile.json` checked.
    package static func problem(_ file: ProfilePathRules.File, bytes: [UInt8], path: String, kinds: KindsTable,
                                before: [UInt8]?, profileID: inout String?) -> String? {
        switch file {
        case .profileInfo:
            guard let info = try? ProfileInfo.decode(bytes) else { return "unreadable" }
            if info.formatVersion > concordFormatVersion {
                return "it is of data format \(info.formatVersion), newer than this concord reads (\(concordFormatVersion)): upgrade concord to a build that reads format \(info.formatVersion), then sync again"
            }
            if info.formatVersion < oldestReadableFormatVersion {
                return "it is of data format \(info.formatVersion), older than any this concord reads (\(oldestReadableFormatVersion))"
            }
            // A profile's format only moves up: `concord upgrade` (an Admin's signed commit) or the first open
            // invitation of a format 3 profile. Going back would drop the rules of the newer format.
            if let before = before.flatMap({ try? ProfileInfo.decode($0) }), before.formatVersion > info.formatVersion {
                return "it changes the data format from \(before.formatVersion) back to \(info.formatVersion); a profile's format only moves up"
            }
            if let expected = profileID, info.id != expected {
                return "it names another profile (id \(info.id), this one is \(expected))"
            }
            profileID = info.id
        case .member(let name):
            guard let member = try? Member.decode(bytes, path: path) else { return "unreadable member file" }
            if member.name != name { return "the file names member \(member.name)" }
        case .invitation(let id):
            guard let invitation = try? OpenInvitation.decode(bytes, path: path) else { return "unreadable open invitation" }
            if invitation.id != id { return "the file names open invitation \(invitation.id)" }
            if invitation.role == .admin { return "an open invitation cannot make Admins" }
        case .gitattributes:
            if bytes != Array(kinds.gitattributes().utf8) {
                return "it differs from what .concord/kinds.json generates (it would change how plain git merges)"
            }
        case .kinds, .conflictCopy, .record, .logDay:
            break   // kinds.json is read before, records and logs are checked in bulk, a conflict copy is kept as it is
        }
        return nil
    }
}
