import ConcordGit
import ConcordKeyIndex
import ConcordKit
import ConcordModel
import ConcordTrust
import Foundation

/// What a concord server keeps of a profile an Admin deleted (`concord destroy` →
/// `concord-destroy`): `repositories/<name>.deleted.json`, holding the Admin's signed
/// `DeletionNotice` and the member files as they were at the deletion. The repository itself is
/// gone. The members' keys stay in the key index (as revoked), so each of their devices can still
/// log in to ask for the notice (`concord-notice`) and remove its copy; nothing else is served
/// under that name, and it cannot be created again.
///
/// Format history: 1 — `formatVersion`, `notice` (the notice's JSON), `members` (member files' JSON).
struct ServerDeletion: Sendable {
    static let formatVersion = 1
    static let suffix = ".deleted.json"

    let notice: DeletionNotice
    let members: [Member]

    /// The membership the key index keeps for the deleted profile: everyone revoked, no invitations.
    var membership: Membership {
        Membership(members.map { member in
            var gone = member
            gone.status = .revoked
            gone.invitationKey = nil
            gone.revokedBy = gone.revokedBy ?? notice.deletedBy
            return gone
        })
    }

    /// Whether the key `fingerprint` (`SHA256:…`) was one of the members' device keys.
    func knows(_ fingerprint: String) -> Bool {
        members.contains { $0.keys.contains { $0.publicKey.fingerprint == fingerprint } }
    }

    /// The refusal every request for the deleted profile gets (the device then asks for the notice).
    func refusal(profile: String) -> ServerRefusal {
        ServerRefusal("profile \"\(profile)\" \(Sync.serverDeletionMarker) \(notice.deletedBy)@\(notice.device) at \(notice.deletedAt); "
                      + "'concord sync' checks the signed deletion notice and removes this device's copy")
    }

    var bytes: [UInt8] {
        JSONValue.object([
            "formatVersion": .number(String(Self.formatVersion)),
            "notice": (try? JSONValue.parse(notice.bytes)) ?? .null,
            "members": .array(members.map(\.json)),
        ]).canonicalBytes()
    }

    static func decode(_ bytes: [UInt8], path: String) throws -> ServerDeletion {
        guard let value = try? JSONValue.parse(bytes), let version = value["formatVersion"]?.intValue else {
            throw ConcordError.corruptRecord(path: path, reason: "not a deleted profile's record")
        }
        guard version <= formatVersion else { throw ConcordError.newerFormat(found: version, supported: formatVersion) }
        guard let notice = value["notice"], let members = value["members"]?.arrayValue else {
            throw ConcordError.corruptRecord(path: path, reason: "missing notice or members")
        }
        return ServerDeletion(notice: try DeletionNotice(bytes: notice.canonicalBytes(), source: path),
                              members: try members.map { member in try readDocument { try Member.decode(member.canonicalBytes(), path: path) } })
    }
}

extension ConcordServer {
    /// `<root>/repositories/<name>.deleted.json`.
    func deletionPath(_ name: String) -> String {
        root.appendingPathComponent(Self.repositoriesDirectory).appendingPathComponent(name + ServerDeletion.suffix).path
    }

    /// What is kept of profile `name` if an Admin deleted it; nil otherwise.
    func deletion(of name: String) throws -> ServerDeletion? {
        let path = deletionPath(name)
        guard let bytes = FileManager.default.contents(atPath: path) else { return nil }
        return try ServerDeletion.decode(Array(bytes), path: path)
    }

    /// The signed deletion notice of profile `name` (what `concord-notice` prints); nil unless an Admin deleted it.
    public func deletionNotice(of name: String) throws -> [UInt8]? {
        try deletion(of: name)?.notice.bytes
    }

    /// `concord-destroy`: deletes profile `name`'s repository for the key `key`, which must be a
    /// device key of an active Admin at main, and `noticeBytes` must be a notice that key signed
    /// for this profile (its id and root commit). The record of the deletion is written first
    /// (durably), then the repository goes, then the key index is updated. Asking again for a
    /// profile already deleted by the same notice's profile succeeds (a re-run finishing the job).
    public func destroy(_ name: String, key: String, noticeBytes: [UInt8]) throws {
        let notice: DeletionNotice
        do { notice = try DeletionNotice(bytes: noticeBytes, source: "the notice sent") } catch {
            throw ServerRefusal((error as? LocalizedError)?.errorDescription ?? "\(error)")
        }
        guard notice.key.fingerprint == key else { throw ServerRefusal("the deletion notice is signed by another key than this connection's") }
        if let existing = try deletion(of: name) {
            guard existing.notice.profileID == notice.profileID, existing.knows(key) else {
                throw existing.refusal(profile: name)
            }
            try finishDeletion(name, existing)
            return
        }
        let path = repositoryPath(name)
        let noProfile = ServerRefusal("no profile \"\(name)\" here that the key \(key) may delete")
        let (membership, profileID, root): (Membership, String?, ObjectID) = try gitCall {
            guard FileManager.default.fileExists(atPath: path) else { throw noProfile }
            let repository = try Repository.open(path)
            guard let main = try repository.resolveReference("refs/heads/main") else { throw noProfile }
            return (try CommitAuthorizer.membershipWithInvitations(in: repository, tree: try repository.commit(main).tree, caches: caches),
                    try PushCheck.readProfileID(in: repository, at: main), try repository.rootCommit(of: main))
        }
        guard membership.holders(of: notice.key).contains(where: { $0.member.status == .active }) else { throw noProfile }
        if let problem = notice.problem(profileID: profileID ?? "", root: root, membership: membership) {
            throw ServerRefusal("refused to delete \"\(name)\": the notice does not count (\(problem))")
        }
        let deletion = ServerDeletion(notice: notice, members: membership.members.values.sorted { $0.name < $1.name })
        do { try FileIO.write(deletion.bytes, to: deletionPath(name), durable: true) } catch {
            throw ConcordError.io(.write, path: nil, "cannot record the deletion of \"\(name)\": \(error.description); nothing deleted")
        }
        try finishDeletion(name, deletion)
    }

    /// Removes the deleted profile's repository (moved aside first, so no connection sees half of
    /// one) and keeps its members' keys in the index as revoked.
    private func finishDeletion(_ name: String, _ deletion: ServerDeletion) throws {
        let path = repositoryPath(name)
        if FileManager.default.fileExists(atPath: path) {
            let aside = root.appendingPathComponent(Self.repositoriesDirectory).appendingPathComponent(".deleted-\(getpid())-\(name)").path
            guard rename(path, aside) == 0 else {
                throw ConcordError.io(.delete, path: path, "cannot delete \(path): \(String(cString: strerror(errno))); ask again")
            }
            try? FileManager.default.removeItem(atPath: aside)
        }
        try keyIndex.update(profile: name, membership: deletion.membership)
    }
}
