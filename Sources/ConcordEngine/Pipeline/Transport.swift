import ConcordGit
import ConcordModel
import Foundation

extension SyncPipeline {
    /// The network part of the transport step: fetches the remote's main into `target` (a
    /// quarantine) under `incomingRef`. Returns what a path fetch read and hashed on the way
    /// (nothing for ssh). Refusals found while copying (a tree the format forbids, a file over its
    /// limit) are `ConcordError.invalidCommit`; a deleted profile, an outage and the rest are
    /// mapped to the errors the user should see (`Sync.transportError`).
    func fetch(into target: Repository, cloning: Bool, commitCopied: (([UInt8]) -> Void)? = nil) throws -> FetchedObjects {
        if case .path(let path) = location {
            // An Admin deleted the profile (`concord destroy`): the directory keeps only the signed notice.
            let noticePath = (path as NSString).appendingPathComponent(DeletionNotice.fileName)
            if let bytes = FileManager.default.contents(atPath: noticePath) {
                let found = try sync.deletionFound(Array(bytes), source: noticePath, remote: remote, cloning: cloning)
                // One that counts, beside a live repository, deletes nothing either.
                if case ConcordError.profileDeleted = found { try Sync.refuseNoticeBesideRepository(at: path, remote: remote) }
                throw found
            }
            if !FileManager.default.fileExists(atPath: path) {
                throw ConcordError.offline(remote: remote, reason: "\(path) does not exist",
                                           localCommits: cloning ? nil : try sync.localCommits(remote))
            }
        }
        do {
            if case .path(let path) = location {
                // Like a local `git fetch`, minus the pack building: copy just the new objects.
                // A file over what its kind of path may hold is refused from its declared size, unread.
                return try target.fetchObjectsFromLocalRepository(at: path, ref: "refs/heads/main", into: Self.incomingRef, durable: false,
                                                                  intoEmpty: cloning, commitCopied: commitCopied,
                                                                  blobLimit: ProfilePathRules.maxBytes(ofFileNamed:))?.objects ?? .none
            } else {
                try target.fetch(url: location.transportURL, refspecs: ["+refs/heads/main:\(Self.incomingRef)"], options: options)
                return .none
            }
        } catch let invalid as InvalidTree {
            throw ConcordError.invalidCommit(commit: invalid.commit.short, path: invalid.path.isEmpty ? nil : invalid.path, reason: invalid.reason)
        } catch let oversized as OversizedFile {
            throw ConcordError.invalidCommit(commit: oversized.commit.short, path: oversized.path,
                                             reason: "\(oversized.size) bytes, over the \(oversized.limit)-byte limit")
        } catch {
            let failure = try sync.transportError(error, remote: remote, location: location, cloning: cloning)
            guard sync.isServerDeletion(failure, location: location) else { throw failure }
            throw try sync.deletionFromServer(remote: remote, location: location, options: options, cloning: cloning, original: failure)
        }
    }
}
