import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// A profile's remotes and its sync with them: fetch into a quarantine, check every new commit
/// (`IncomingCheck`), merge with the per-kind policies, push without forcing (a `SyncEngine`
/// keeps doing so). The sync's steps (`run`, `SyncPipeline`) are in `Pipeline/`, the merge in
/// `Merge/`, the engine that keeps syncing in ConcordKit's `Syncing/`.
package struct Sync {
    let profile: Profile
    let repository: Repository
    var environment: ConcordEnvironment { profile.environment }
    var caches: EngineCaches { profile.caches }

    /// Ahead/behind against the last fetched state of `remote`, and when it last synced.
    public func status(remote: String = "origin") throws -> SyncStatus {
        let location = try remoteLocation(remote)
        let (head, tracking) = try heads(remote: remote)
        var ahead = 0
        var behind = 0
        if let head, let tracking {
            (ahead, behind) = try gitCall { try repository.aheadBehind(local: head, upstream: tracking) }
        } else if let head {
            ahead = try countCommits(head)
        }
        return SyncStatus(remote: remote, url: location.transportURL, ahead: ahead, behind: behind,
                          lastSync: lastSync(remote: remote))
    }

    /// True when `remote` has commits this device has not fetched, or this device has commits
    /// the remote lacks. Reads only the remote's ref list (no objects).
    public func isNeeded(remote: String = "origin", as identity: Identity) throws -> Bool {
        let location = try remoteLocation(remote)
        let (head, tracking) = try heads(remote: remote)
        if head != tracking { return true }
        if case .path(let path) = location {
            // Read from the ref files: no libgit2 on an untrusted directory, and far cheaper.
            // A deletion notice there (`concord destroy`) is for the sync to judge.
            if FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent(DeletionNotice.fileName)) { return true }
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConcordError.offline(remote: remote, reason: "\(path) does not exist", localCommits: try localCommits(remote))
            }
            do { return try Repository.localRemoteHead(at: path, ref: "refs/heads/main") != tracking } catch {
                throw try transportError(error, remote: remote, location: location)
            }
        }
        let heads: [String: ObjectID]
        do {
            heads = try repository.remoteHeads(remote: remote, options: transportOptions(for: identity, remote: remote, location: location))
        } catch {
            let failure = try transportError(error, remote: remote, location: location)
            // A concord server saying the profile was deleted: the sync asks for the notice and judges it.
            if isServerDeletion(failure, location: location) { return true }
            throw failure
        }
        return heads["refs/heads/main"] != tracking
    }

    // MARK: Remotes

    /// The profile's remotes, by name, with their URLs.
    public func remotes() throws -> [(name: String, url: String)] {
        try gitCall { try repository.remotes() }
    }

    /// Adds remote `name` at `url` (a path, or `ssh://`); refuses an existing name.
    public func addRemote(_ name: String, url: String) throws {
        guard RecordID.isValid(name) else { throw ConcordError.invalidInput(.badName, "invalid remote name \"\(name)\": use letters, digits, . _ -") }
        guard try gitCall({ try repository.remoteURL(name) }) == nil else { throw ConcordError.remoteExists(name) }
        let location = try RemoteLocation(url: url)
        try gitCall { try repository.addRemote(name, url: location.transportURL) }
    }

    /// Removes remote `name`.
    public func removeRemote(_ name: String) throws {
        guard try gitCall({ try repository.remoteURL(name) }) != nil else { throw ConcordError.unknownRemote(name) }
        try gitCall { try repository.removeRemote(name) }
    }

    /// Connects to ssh remote `name`, and records the host key it presents as trusted in
    /// `$CONCORD_HOME/known_hosts`. Returns the fingerprint. With `fingerprint` (`SHA256:…`, as
    /// `ssh-keygen -lf` prints it, from the server's admin), only a host key of that fingerprint is
    /// trusted: another is refused (`hostKeyMismatch`), the connection cut before anything is sent,
    /// and nothing recorded.
    public func trustRemote(_ name: String, identity: Identity, fingerprint: String? = nil) throws -> String {
        let location = try remoteLocation(name)
        guard let hostName = location.knownHostsName else {
            throw ConcordError.invalidInput(.wrongRemote, "\(name) is a path remote: there is no host key to trust")
        }
        var seen: HostKey?
        let options = TransportOptions(sshPrivateKey: identity.privateKeyPath.path, trustHostKey: { key in
            seen = key
            return fingerprint.map { $0 == key.fingerprint } ?? true
        }, stallTimeout: environment.networkTimeout, knownHostLines: KnownHosts(home: environment.home).lines(for: hostName))
        do { _ = try repository.remoteHeads(remote: name, options: options) } catch {
            if seen == nil { throw try transportError(error, remote: name, location: location) }
        }
        guard let key = seen else { throw ConcordError.io(.read, path: nil, "\(name) presented no host key") }
        if let fingerprint, fingerprint != key.fingerprint {
            throw ConcordError.hostKeyMismatch(remote: name, host: hostName, expected: fingerprint, presented: key.fingerprint)
        }
        try KnownHosts(home: environment.home).trust(host: hostName, key: key)
        return key.fingerprint
    }

    /// Merges `revision` (a branch, `refs/remotes/<remote>/main`, a commit id...) into this
    /// profile's branch: entirely in memory with the per-kind policies, then one signed merge
    /// commit, a compare-and-swap of the branch and a working-tree update. Never leaves a MERGING
    /// state. A remote's main (`origin/main`, `refs/remotes/origin/main`) is the merge's first
    /// parent, its main line; anything else (a peer's branch, a commit id) is merged in as a side
    /// line, its membership decisions judged against this device's (docs/security.md). Files the
    /// policies cannot resolve keep the main line's version; the other is saved under
    /// `.concord/conflicts/` and listed in `unresolved`.
    public func merge(revision: String, as identity: Identity) throws -> MergeReport {
        let theirs = try gitCall { try repository.resolveRevision(revision) }
        let remoteMain = revision.hasPrefix("refs/remotes/") ? revision : "refs/remotes/" + revision
        let isRemoteMain = remoteMain.hasSuffix("/main") && (try? gitCall { try repository.resolveReference(remoteMain) }) == theirs
        return try profile.locked {
            // A peer's branch is as hostile as anything fetched: every commit it brings is checked by the
            // rule every device and server runs before anything of it is merged (a remote's main was, when fetched).
            if !isRemoteMain {
                let known = try [gitCall { try repository.resolveReference("HEAD") }].compactMap { $0 }
                _ = try IncomingCheck(repository: repository, profileID: profile.info.id, caches: profile.caches).verify(tip: theirs, known: known)
            }
            return try mergeLocked(theirs, as: identity, mainLine: isRemoteMain ? .theirs : .head)
        }
    }
}
