import ConcordGit
import ConcordModel
import Foundation

extension Sync {
    /// Pushes `head`; false when the remote moved since `expected` (the caller retries).
    func push(_ head: ObjectID, expected: ObjectID?, remote: String, location: RemoteLocation,
                      options: TransportOptions, attemptsLeft: Int) throws -> Bool {
        switch location {
        case .path(let path):
            do {
                // Pushers to one bare repository take its own profile lock: a pusher killed while
                // git's ref lock was held is then known dead, and the next one clears that lock.
                let remoteLock = try ProfileLock(gitDirectory: path.hasSuffix("/") ? path : path + "/")
                defer { withExtendedLifetime(remoteLock) {} }
                try repository.pushToLocalRepository(at: path, ref: "refs/heads/main", tip: head, expected: expected)
                return true
            } catch let error as GitError where [.modified, .exists].contains(error.code) {
                return false
            } catch let error as GitError where error.code == .locked {
                // Another push holds the remote's branch lock right now, or a killed one left it behind.
                let lockFile = (path as NSString).appendingPathComponent("refs/heads/main.lock")
                if let age = Self.age(ofFile: lockFile), age > Self.staleRemoteLockAge {
                    unlink(lockFile)
                    return false
                }
                // A live push holds the lock for milliseconds; one seconds old is most likely abandoned.
                if attemptsLeft <= 1, let age = Self.age(ofFile: lockFile), age > 5 {
                    throw ConcordError.io(.lock, path: lockFile, "\(remote)'s branch is locked by \(lockFile) (left by a push that was killed?): it is removed automatically once it is \(Int(Self.staleRemoteLockAge)) s old; sync again then")
                }
                return false
            } catch {
                throw try transportError(error, remote: remote, location: location)
            }
        case .ssh:
            let outcome: PushOutcome
            do {
                // Compare-and-swap, as on a path: nothing is sent unless the server's main is at `expected`.
                outcome = try repository.push(remote: remote, refspec: "refs/heads/main:refs/heads/main", options: options,
                                              onlyIf: .remoteAt(expected))
            } catch let error as GitError where [.nonFastForward, .modified].contains(error.code) {
                return false
            } catch {
                throw try transportError(error, remote: remote, location: location)
            }
            guard let rejection = outcome.rejections.first else { return true }
            let reason = rejection.reason.lowercased()
            if ["fetch first", "non-fast-forward", "stale", "failed to lock", "cannot lock", "failed to update ref"]
                .contains(where: reason.contains) {
                return false
            }
            let server = outcome.serverMessages.isEmpty ? "" : " (server says: \(outcome.serverMessages.joined(separator: "; ")))"
            throw ConcordError.pushRejected(remote: remote, reason: rejection.reason + server)
        }
    }
}
