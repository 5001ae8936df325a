import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// `concord destroy`: an Admin deletes a profile everywhere concord can reach, leaving a signed
/// `DeletionNotice` where its repositories were; every other device that syncs finds the notice,
/// checks it against the membership it holds, and removes its copy.
/// What `ConcordStore.destroy` did: each remote deleted (one line each) or not (why), and whether
/// this device's copy went (only once every remote is done).
public struct DestroyReport: Sendable {
    /// The signed notice left where each repository was.
    public let notice: DeletionNotice
    /// Each remote deleted, with a line saying what was deleted.
    public let deleted: [(remote: String, what: String)]
    /// Each remote that could not be deleted, and why.
    public let failed: [(remote: String, error: ConcordError)]
    /// Whether this device's copy was deleted (only once every remote was).
    public var copyDeleted: Bool { failed.isEmpty }
}

extension Sync {
    /// What a concord server's refusal says for a deleted profile (`ConcordServer.admit`): the
    /// device then asks for the notice (`concord-notice`) and decides from it alone.
    package static let serverDeletionMarker = "was deleted by"

    /// The signed notice deleting this profile, by `identity`'s owner, who must be an active Admin.
    public func deletionNotice(as identity: Identity) throws -> DeletionNotice {
        let owner = identity.acting(as: identity.owner)
        _ = try profile.members.authorizeAdmin(owner, action: "deleting the profile")
        return DeletionNotice.sign(profileID: profile.info.id, profileName: profile.info.name, root: try profile.history.rootCommit(), identity: owner,
                                   at: environment.wallClock())
    }

    /// What `destroy` did (`DestroyReport`).
    package typealias DestroyReport = ConcordEngine.DestroyReport

    /// `concord destroy`: signs the deletion notice (`identity`'s owner must be an active Admin),
    /// deletes every remote's repository (`deleteRemote`), and, once all are done, this device's
    /// copy and its registry entry (`removeLocalCopy`; kept in the registry as deleted, or
    /// forgotten with `forget`). A remote that fails keeps the copy, so that running it again
    /// finishes the job. `only`: the remotes to delete, when not every one (`identity delete` skips
    /// those that already deleted the profile or let this identity in no more).
    /// `beforeRemovingCopy` runs once every remote is deleted, just before this device's copy is.
    public func destroy(as identity: Identity, forget: Bool = false, only: [String]? = nil,
                        beforeRemovingCopy: (DeletionNotice) -> Void = { _ in }) throws -> DestroyReport {
        let notice = try deletionNotice(as: identity)
        var deleted = [(remote: String, what: String)]()
        var failed = [(remote: String, error: ConcordError)]()
        for remote in try remotes() where only?.contains(remote.name) ?? true {
            do { deleted.append((remote.name, try deleteRemote(remote.name, notice: notice, as: identity))) } catch {
                failed.append((remote.name, error as? ConcordError ?? .io(.write, path: nil, (error as? LocalizedError)?.errorDescription ?? "\(error)")))
            }
        }
        if failed.isEmpty {
            beforeRemovingCopy(notice)
            try profile.removeLocalCopy(unsentTo: "", removedBecause: forget ? nil : "deleted: you deleted it at \(notice.deletedAt)", savingUnsent: false)
        }
        return DestroyReport(notice: notice, deleted: deleted, failed: failed)
    }

    /// Deletes the repository of `remote`, leaving `notice` in its place: a path remote's directory
    /// keeps only the notice file; a concord server deletes it through `concord-destroy` (a stock
    /// ssh + git server refuses, and says so). Running it again after a failure finishes the job.
    /// Returns one line saying what was deleted.
    public func deleteRemote(_ remote: String, notice: DeletionNotice, as identity: Identity) throws -> String {
        let location = try remoteLocation(remote)
        switch location {
        case .path(let path):
            try Self.replaceRepository(at: path, with: notice)
            return "deleted \(path) (it keeps only the signed deletion notice)"
        case .ssh:
            do {
                _ = try Repository.runServerVerb("concord-destroy", url: location.transportURL, input: notice.bytes,
                                                 options: transportOptions(for: identity, remote: remote, location: location))
            } catch {
                throw try transportError(error, remote: remote, location: location)
            }
            return "deleted on the server of \(remote) (\(location.transportURL))"
        }
    }

    /// Replaces the bare repository at `path` with `notice`: the notice is written first (durably),
    /// then everything else goes, under the repository's push lock. Refuses a directory that is
    /// neither this profile's repository nor already its deletion notice.
    static func replaceRepository(at path: String, with notice: DeletionNotice) throws {
        let noticePath = (path as NSString).appendingPathComponent(DeletionNotice.fileName)
        if let bytes = FileManager.default.contents(atPath: noticePath) {
            let existing = try DeletionNotice(bytes: Array(bytes), source: noticePath)
            guard existing.profileID == notice.profileID else {
                throw ConcordError.invalidInput(.wrongRemote, "\(path) holds the deletion notice of another profile (\(existing.profileName)); nothing deleted")
            }
        } else {
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConcordError.offline(remote: path, reason: "\(path) does not exist", localCommits: nil)
            }
            let root: ObjectID? = try gitCall {
                guard let main = try Repository.localRemoteHead(at: path, ref: "refs/heads/main") else { return nil }
                return try Repository.open(path).rootCommit(of: main)
            }
            guard root == nil || root?.hex == notice.root else {
                throw ConcordError.invalidInput(.wrongRemote, "\(path) holds another profile's history; nothing deleted")
            }
        }
        try withRemoteLock(path) {
            do {
                try FileIO.write(notice.bytes, to: noticePath, durable: true)
            } catch {
                throw ConcordError.io(.write, path: noticePath, "cannot write the deletion notice to \(noticePath): \(error); nothing deleted")
            }
            let entries: [String]
            do { entries = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
                throw ConcordError.io(.list, path: path, "cannot list \(path): \(error.localizedDescription); run destroy again")
            }
            // The lock's directory goes once the lock is released.
            for entry in entries where entry != DeletionNotice.fileName && entry != "concord" {
                do { try FileManager.default.removeItem(atPath: (path as NSString).appendingPathComponent(entry)) } catch {
                    throw ConcordError.io(.delete, path: path, "cannot delete \(entry) in \(path): \(error.localizedDescription); run destroy again")
                }
            }
        }
        try? FileManager.default.removeItem(atPath: (path as NSString).appendingPathComponent("concord"))
    }

    /// A path remote counts as deleted only when its directory keeps nothing but the notice (and
    /// whatever a `concord destroy` interrupted left without a `HEAD`): a notice beside a live
    /// repository is a destroy that did not finish, or a notice copied there (a notice names no
    /// remote), and is refused rather than obeyed.
    static func refuseNoticeBesideRepository(at path: String, remote: String) throws {
        guard FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent("HEAD")) else { return }
        throw ConcordError.invalidInput(.wrongRemote, "\(remote) (\(path)) holds a deletion notice beside a live repository: a deletion of the profile that did "
            + "not finish (the Admin deletes it again) or a notice copied there; nothing here changed")
    }

    /// Runs `body` holding the push lock of the bare repository at `path` (what pushers take).
    private static func withRemoteLock(_ path: String, _ body: () throws -> Void) throws {
        let lock = try ProfileLock(gitDirectory: path.hasSuffix("/") ? path : path + "/")
        defer { withExtendedLifetime(lock) {} }
        try body()
    }

    /// The error a fetch ends with when `remote` holds a deletion notice (`bytes`, read from
    /// `source`): `.profileDeleted` when the notice deletes this profile by the membership this
    /// device holds; otherwise a refusal saying why it does not count. Nothing local changes here.
    func deletionFound(_ bytes: [UInt8], source: String, remote: String, cloning: Bool) throws -> Error {
        let notice = try DeletionNotice(bytes: bytes, source: source)
        // A clone has no membership to judge by; it only reports what the remote holds.
        guard !cloning else { return notice.deleted }
        let membership: Membership = try gitCall {
            guard let head = try repository.resolveReference("HEAD") else { return Membership([]) }
            return try CommitAuthorizer.membershipWithInvitations(in: repository, tree: try repository.commit(head).tree, caches: caches)
        }
        if let problem = notice.problem(profileID: profile.info.id, root: try profile.history.rootCommit(), membership: membership) {
            return ConcordError.refused(remote: remote, message: "it holds a deletion notice that does not count: \(problem)")
        }
        return notice.deleted
    }

    /// Whether `error` (from a transfer with `remote`) is a concord server saying the profile was deleted.
    func isServerDeletion(_ error: Error, location: RemoteLocation) -> Bool {
        guard case .ssh = location, case ConcordError.refused(_, let message) = error else { return false }
        return message.contains(Self.serverDeletionMarker)
    }

    /// The notice a concord server keeps for this deleted profile, judged as `deletionFound` does;
    /// `original` when the server gives none.
    func deletionFromServer(remote: String, location: RemoteLocation, options: TransportOptions, cloning: Bool,
                            original: Error) throws -> Error {
        let bytes: [UInt8]
        do {
            bytes = try Repository.runServerVerb("concord-notice", url: location.transportURL, limit: DeletionNotice.maxBytes, options: options)
        } catch {
            return original
        }
        return try deletionFound(bytes, source: "\(remote) (\(location.transportURL))", remote: remote, cloning: cloning)
    }
}
