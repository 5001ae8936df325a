import ConcordModel
import ConcordTrust

/// The members of a profile at one commit (its `.concord/members/*.json`), indexed by device key.
package struct Membership: Sendable {
    package let members: [String: Member]
    /// The open invitations beside them (read where a server decides who may connect; the access
    /// rule reads each one when a commit needs it).
    package var openInvitations: [OpenInvitation] = []
    private let keyOwners: [SSHPublicKey: [(member: String, device: String)]]

    package init(_ members: [Member]) {
        self.members = Dictionary(members.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var owners = [SSHPublicKey: [(member: String, device: String)]]()
        for member in members { for key in member.keys { owners[key.publicKey, default: []].append((member.name, key.device)) } }
        keyOwners = owners
    }

    /// The members holding `key`, active ones first (a key listed twice is judged by its active holder).
    package func holders(of key: SSHPublicKey) -> [(member: Member, device: String)] {
        (keyOwners[key] ?? []).compactMap { owner in members[owner.member].map { ($0, owner.device) } }
            .sorted { ($0.member.status == .active ? 0 : 1) < ($1.member.status == .active ? 0 : 1) }
    }
}

/// Who signed a commit, as a membership names them.
package struct CommitSigner: Sendable {
    package let member: Member
    package let device: String
    /// `member@device`, as refusals name the signer.
    package var label: String { "\(member.name)@\(device)" }

    package init(member: Member, device: String) {
        self.member = member
        self.device = device
    }
}

/// The access half of the validity rule (docs/security.md), as pure functions of the membership
/// and kinds in force at a commit's parent, its signing key and the paths it changes: no git, no
/// I/O, so a device, a server hook and the tests call the same code.
///
/// - Rule 1: a commit is signed by a key of a member ACTIVE in its parent's membership (a root
///   commit: an active Admin of its own tree; a merge: active in every parent's membership).
/// - Rule 2: every path it changes is writable by that member's role under the parent's kinds;
///   `.concord/kinds.json`, `.concord/profile.json`, `.gitattributes`, open invitations and member
///   files are Admin-only, except that a member may add or remove their own device keys.
package enum AccessRule {
    /// Rule 1: the active member of `membership` holding `key`, or why there is none.
    package static func signer(_ key: SSHPublicKey, in membership: Membership) -> Result<CommitSigner, Refusal> {
        guard let holder = membership.holders(of: key).first else {
            return .failure(Refusal(signer: "an unknown key (\(key.fingerprint))",
                                    reason: "no member of the profile before it holds that key"))
        }
        let signer = CommitSigner(member: holder.member, device: holder.device)
        guard holder.member.status == .active else {
            return .failure(Refusal(signer: signer.label, reason: "\(holder.member.name) is \(holder.member.status.rawValue), not an active member"))
        }
        return .success(signer)
    }

    /// Rule 1 for a root commit: the signer must be an active Admin listed in the commit's own tree.
    package static func rootSigner(_ key: SSHPublicKey, in membership: Membership) -> Result<CommitSigner, Refusal> {
        switch signer(key, in: membership) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let signer):
            guard signer.member.role == .admin else {
                return .failure(Refusal(signer: signer.label, reason: "a profile's first commit must be signed by its creator, an Admin; \(signer.member.name) is \(signer.member.role.title)"))
            }
            return .success(signer)
        }
    }

    /// Rule 2 for one changed path: nil when `signer` may make the change under `kinds`, or the
    /// refusal's reason ("Viewers may not write vocabulary"). `memberFile` holds the member file's
    /// bytes before and after the change when `path` is the signer's own member file (the only
    /// member file a non-Admin may touch, and then only its keys). Conflict copies a merge writes
    /// are not asked about (rule 3 compares a merge with the policy merge, which writes them).
    package static func mayChange(_ path: String, by signer: Member, kinds: KindsTable,
                          ownMemberFile: (before: [UInt8]?, after: [UInt8]?)? = nil) -> String? {
        if signer.role == .admin { return nil }
        let adminOnly = "only Admins may change it; \(signer.name) is \(signer.role.title)"
        switch ProfilePathRules.classify(Array(path.utf8), kinds: kinds) {
        case .failure(.wrongBucket):
            return "it is \(ProfilePathRules.Refusal.wrongBucket), where no record lives (each record's bucket is set by its id)"
        case .failure:
            return "it is not a file of the kinds in the parent's \(KindsTable.path) (only Admins may add kinds); \(signer.name) is \(signer.role.title)"
        case .success(let file):
            switch file {
            case .profileInfo, .kinds, .gitattributes, .invitation:
                return adminOnly
            case .member(let name):
                guard name == signer.name else { return "only Admins may change another member; \(signer.name) is \(signer.role.title)" }
                return ownKeysOnly(ownMemberFile, path: path, signer: signer)
            case .conflictCopy:
                return "only a merge writes conflict copies, and only Admins may change them by hand; \(signer.name) is \(signer.role.title)"
            case .record(let kind, _), .logDay(let kind, _):
                return signer.role >= kind.writers ? nil : "\(signer.role.title)s may not write \(kind.name)"
            }
        }
    }

    /// A member's change to their own member file: only the device keys may differ (the rest of
    /// the file, as JSON, stays exactly as it was: no role, status or new field rides along) —
    /// or the member leaves (`concord leave`): status revoked, by themselves, no keys left.
    private static func ownKeysOnly(_ files: (before: [UInt8]?, after: [UInt8]?)?, path: String, signer: Member) -> String? {
        let refusal = "a member may only add or remove their own device keys, or leave; anything else in a member file needs an Admin"
        guard let files, let before = files.before, let after = files.after,
              let leaving = try? Member.decode(after, path: path),
              case .object(var old)? = try? JSONValue.parse(before), case .object(var new)? = try? JSONValue.parse(after) else {
            return refusal
        }
        old["keys"] = nil
        new["keys"] = nil
        if leaving.status == .revoked {
            guard leaving.revokedBy == signer.name, leaving.keys.isEmpty, leaving.revokedAt.flatMap(HLClock.parseInstant) != nil else {
                return "a member who leaves is revoked by themselves with no device keys left; anything else needs an Admin"
            }
            for field in ["status", "revokedBy", "revokedAt"] { old[field] = nil; new[field] = nil }
        }
        return old == new ? nil : refusal
    }

    /// A non-Admin's change to a log file: every entry it had is still there, byte for byte, and
    /// every entry added is attributed to `signer` (`by`). Nil when it is such an append, else why not.
    package static func logAppendProblem(before: [UInt8], after: [UInt8]?, by signer: Member) -> String? {
        guard let after else { return "a log file is never removed" }
        func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
            bytes.split(separator: 0x0A).filter { $0.contains { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D } }
        }
        let kept = Set(lines(before).map(Array.init))
        let now = lines(after)
        guard kept.isSubset(of: Set(now.map(Array.init))) else {
            return "a log only grows: \(signer.name) removed or changed entries already in it"
        }
        for line in now where !kept.contains(Array(line)) {
            guard let entry = try? LogEntry.decode(line: line) else { return "it adds a log line that does not read" }
            guard entry.by == signer.name else {
                return "\(signer.name) may only add entries of their own; this adds one by \(entry.by)"
            }
        }
        return nil
    }

    /// How a refusal names a changed path: `kind/id` for a record, the path otherwise.
    package static func label(_ path: String, kinds: KindsTable) -> String {
        if case .success(.record(let kind, let id)) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) { return "\(kind.name)/\(id)" }
        return path
    }

    /// Why a commit is refused, and who signed it as far as that is known.
    package struct Refusal: Error, Sendable {
        package let signer: String
        package let reason: String
    }
}

extension Role {
    /// The role's name as people read it: "Admin", "Editor", "User", "Viewer".
    package var title: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
}
