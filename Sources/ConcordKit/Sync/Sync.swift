import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// A profile's remotes and its sync with them: fetch into a quarantine, check every new commit
/// (`IncomingCheck`), merge with the per-kind policies, push without forcing (a `SyncEngine`
/// keeps doing so). The internals it runs on (`fetchVerified`, `mergeLocked`, the transport
/// options and errors) are in this folder and in `Merge/`.
public struct Sync {
    let profile: Profile
    private var repository: Repository { profile.repository }
    private var environment: ConcordEnvironment { profile.environment }

    /// Fetches `remote`'s main, merges it with the policies (in memory, offline), moves `main` by
    /// compare-and-swap, and pushes without ever forcing. When the push loses a race with another
    /// device, fetches, merges and pushes again (bounded, with jitter). Commits nothing implicitly.
    public func run(remote: String = "origin", as identity: Identity) throws -> SyncReport {
        try run(remote: remote, as: identity, prefetched: nil)
    }

    /// `run`, taking `prefetched` (what a concord server sent with a `concord-wait` answer) in place
    /// of the first fetch when it was made against what this device last fetched.
    func run(remote: String, as identity: Identity, prefetched: PrefetchedPack?) throws -> SyncReport {
        let lock = try profile.lock()
        defer { withExtendedLifetime(lock) {} }
        // A long-running caller (`watch`) keeps this profile open across thousands of syncs: what
        // libgit2 cached during this one is let go, so memory does not grow with their number.
        defer { repository.releaseCaches() }
        let location = try profile.remoteLocation(remote)
        let options = profile.transportOptions(for: identity, remote: remote, location: location)
        var received = 0
        var sent = 0
        var changed = [String]()
        var resolved = [ResolvedConflict]()
        var unresolved = [UnresolvedFile]()
        var leftOut = [LeftOutChange]()
        var contested = [String]()
        var warnings = [String]()
        var rewound = false
        // The files each received commit changed, for the audit index once the sync is done.
        let changedPaths = ChangedPaths()
        defer { profile.updateAuditIndex(known: changedPaths) }
        // With a pack from the server the remote moved: a push alone would be refused.
        if prefetched == nil, let report = try pushAhead(remote: remote, location: location, options: options, identity: identity) {
            return report
        }
        let start = try gitCall { try repository.resolveReference("HEAD") }
        /// The report, with the writes the merges since `start` left out.
        func finished(_ head: ObjectID, attempt: Int) throws -> SyncReport {
            var report = SyncReport(remote: remote, received: received, sent: sent, changedFiles: changed, resolved: resolved,
                                    unresolved: unresolved, head: head.hex, attempts: attempt, warnings: warnings, leftOut: leftOut,
                                    contested: contested)
            report.lost = try lostEdits(from: start, to: head, known: changedPaths)
            report.yours = report.lost.filter { $0.loser.member == identity.member }
            return report
        }
        for attempt in 1...Profile.maxSyncAttempts {
            let before = try gitCall { try repository.resolveReference("HEAD") }
            let lastFetched = try gitCall { try repository.resolveReference(Profile.trackingRef(remote)) }
            let remoteTip = try profile.fetchVerified(remote: remote, location: location, options: options, changedPaths: changedPaths,
                                                      prefetched: attempt == 1 ? prefetched : nil)
            if let lastFetched, attempt == 1 {
                if remoteTip == nil {
                    // Deleted on the server: this device still has everything; pushing restores it.
                    warnings.append("\(remote)'s main had been deleted (it was at \(lastFetched.short)); this device's history is pushed back")
                    try gitCall { try repository.deleteReference(Profile.trackingRef(remote)) }
                } else if let remoteTip, remoteTip != lastFetched, try gitCall({ try repository.isAncestor(remoteTip, of: lastFetched) }) {
                    warnings.append("\(remote)'s main went back from \(lastFetched.short) to \(remoteTip.short) (rewound on the server); this device's history is pushed back")
                    rewound = true
                } else if let remoteTip, remoteTip != lastFetched, try !gitCall({ try repository.isAncestor(lastFetched, of: remoteTip) }) {
                    // Rewound on the server, and commits pushed on top since (checked like any others):
                    // the commits it dropped are still here. When they changed only records, they are
                    // merged with the new ones and pushed back. When they changed the profile's own files
                    // (members, invitations, kinds), the new history may rest on access they took away
                    // (a revocation dropped so that a revoked member's commits pass): nothing of it is
                    // merged, and the tracking ref goes back, so the next sync refuses it again.
                    let dropped = try gitCall { try repository.newCommits(from: lastFetched, excluding: [remoteTip]) }
                    if let commit = try firstChangingProfileFiles(dropped) {
                        try gitCall {
                            try repository.updateReference(Profile.trackingRef(remote), to: lastFetched, expected: remoteTip,
                                                           message: "concord: refused a rewritten main")
                        }
                        throw ConcordError.remoteRewritten(remote: remote, was: lastFetched.short, now: remoteTip.short,
                                                           dropped: dropped.count, changingAccess: commit.short)
                    }
                    warnings.append("\(remote)'s main was rewritten on the server: it is now \(remoteTip.short), without \(dropped.count) "
                        + "commit(s) up to \(lastFetched.short) that this device has (they changed records only); they are merged "
                        + "with the new commits and pushed back")
                }
            }
            if let remoteTip {
                // A revocation of this device's member is final: nothing of theirs is merged or pushed.
                // Not when main went back: what a rewound main says is older than what this device
                // already fetched (a server replaying a revocation from before a re-invitation).
                if !rewound { try profile.members.checkAccess(at: remoteTip, for: identity) }
                if let before { received += try gitCall { try repository.aheadBehind(local: before, upstream: remoteTip).behind } }
                let report = try profile.mergeLocked(remoteTip, as: identity)
                changed += report.changedFiles
                resolved += report.resolved
                unresolved += report.unresolved
                leftOut += report.leftOut
                contested += report.contested
            }
            guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else {
                throw ConcordError.emptyRemote(location.transportURL)
            }
            if head == remoteTip {
                try profile.recordSync(remote: remote, head: head)
                return try finished(head, attempt: attempt)
            }
            let outgoing = try remoteTip.map { tip in try gitCall { try repository.aheadBehind(local: head, upstream: tip).ahead } }
                ?? profile.countCommits(head)
            try refuseUnpublishable(head, known: remoteTip)
            if try profile.push(head, expected: remoteTip, remote: remote, location: location, options: options,
                        attemptsLeft: Profile.maxSyncAttempts - attempt) {
                sent += outgoing
                try recordPush(of: head, to: remote)
                return try finished(head, attempt: attempt)
            }
            // Another device pushed first: fetch, merge and try again after a little jitter.
            usleep(useconds_t.random(in: 20_000...(60_000 * useconds_t(attempt))))
        }
        throw ConcordError.remoteKeptMoving(remote: remote, attempts: Profile.maxSyncAttempts)
    }

    /// The first of `commits` that changes a file access depends on (a member file, an open
    /// invitation, kinds.json, profile.json) against any of its parents, if one does. Conflict
    /// copies under `.concord/conflicts/` are data, not access.
    private func firstChangingProfileFiles(_ commits: [Commit]) throws -> ObjectID? {
        let prefixes = [ProfilePaths.membersDirectory + "/", ProfilePaths.invitationsDirectory + "/", KindsTable.path, ProfilePaths.profile].map { Array($0.utf8) }
        for commit in commits {
            let parentTrees = try gitCall { try commit.parents.map { try repository.commit($0).tree } }
            for tree in parentTrees.isEmpty ? [nil] : parentTrees.map(Optional.some) {
                let changes = try gitCall { try repository.treeChanges(from: tree, to: commit.tree) }
                if changes.contains(where: { change in prefixes.contains { change.path.starts(with: $0) } }) { return commit.id }
            }
        }
        return nil
    }

    /// The writer's usual sync over ssh, in one connection instead of two: this device has new
    /// commits on top of what it last fetched, and the server's main is still there. A fetch would
    /// bring nothing, so the push alone is the whole sync. The push is a compare-and-swap against
    /// what was last fetched (`Repository.PushCondition.remoteAt`): if main moved, was rewound or
    /// deleted, nothing is sent and nil is returned, and `run` fetches, checks, merges and pushes
    /// as always (so every warning and refusal is as before). A server that refuses the push (a
    /// revoked key, a deleted profile, a hook's verdict) also leaves it to `run`, whose fetch finds
    /// out why; only an unreachable or untrusted server ends the sync here. Nil, too, for a path
    /// remote (its fetch reads files, no connection to save) and when there is nothing to push.
    private func pushAhead(remote: String, location: RemoteLocation, options: TransportOptions, identity: Identity) throws -> SyncReport? {
        guard case .ssh = location,
              let head = try gitCall({ try repository.resolveReference("HEAD") }),
              let tracking = try gitCall({ try repository.resolveReference(Profile.trackingRef(remote)) }),
              head != tracking, try gitCall({ try repository.isAncestor(tracking, of: head) }) else { return nil }
        // As `run` after a fetch that brings nothing: a device whose member was revoked pushes nothing.
        try profile.members.checkAccess(at: tracking, for: identity)
        let outgoing = try gitCall { try repository.aheadBehind(local: head, upstream: tracking).ahead }
        try refuseUnpublishable(head, known: tracking)
        do {
            guard try profile.push(head, expected: tracking, remote: remote, location: location, options: options,
                                   attemptsLeft: Profile.maxSyncAttempts) else { return nil }
        } catch let error as ConcordError {
            switch error {
            case .offline, .untrustedHost, .authenticationFailed: throw error
            default: return nil
            }
        }
        try recordPush(of: head, to: remote)
        return SyncReport(remote: remote, received: 0, sent: outgoing, changedFiles: [], resolved: [], unresolved: [], head: head.hex,
                          attempts: 1, warnings: [])
    }

    /// A device never publishes what it would refuse: this device's commits up to `head` that the
    /// remote (at `known`) lacks pass the check every other device runs on them (`IncomingCheck`:
    /// signatures, roles, merges against their recomputed policy merge, structure), or the sync stops
    /// here, sending nothing (a commit made with plain git on this copy, unsigned or outside the role).
    private func refuseUnpublishable(_ head: ObjectID, known: ObjectID?) throws {
        let check = IncomingCheck(repository: repository, profileID: profile.info.id)
        do {
            try check.verify(tip: head, known: known.map { [$0] } ?? [])
        } catch let error as ConcordError {
            switch error {
            case .invalidCommit(let commit, _, _), .unauthorizedCommit(let commit, _, _, _):
                throw ConcordError.unpublishable(commit: commit, problem: error.parts.problem)
            default: throw error
            }
        }
    }

    /// After `head` was pushed to `remote`: the tracking ref moves to it (the push does not move it:
    /// path pushes bypass libgit2, ssh pushes use an anonymous remote) and the sync's time is recorded.
    private func recordPush(of head: ObjectID, to remote: String) throws {
        let tracking = try gitCall { try repository.resolveReference(Profile.trackingRef(remote)) }
        if tracking != head {
            try gitCall { try repository.updateReference(Profile.trackingRef(remote), to: head, expected: tracking, message: "concord: pushed") }
        }
        try profile.recordSync(remote: remote, head: head)
    }

    /// Ahead/behind against the last fetched state of `remote`, and when it last synced.
    public func status(remote: String = "origin") throws -> SyncStatus {
        let location = try profile.remoteLocation(remote)
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let tracking = try gitCall { try repository.resolveReference(Profile.trackingRef(remote)) }
        var ahead = 0
        var behind = 0
        if let head, let tracking {
            (ahead, behind) = try gitCall { try repository.aheadBehind(local: head, upstream: tracking) }
        } else if let head {
            ahead = try profile.countCommits(head)
        }
        return SyncStatus(remote: remote, url: location.transportURL, ahead: ahead, behind: behind,
                          lastSync: SyncState.load(repository.gitDirectory, remote: remote).lastSync)
    }

    /// True when `remote` has commits this device has not fetched, or this device has commits
    /// the remote lacks. Reads only the remote's ref list (no objects).
    public func isNeeded(remote: String = "origin", as identity: Identity) throws -> Bool {
        let location = try profile.remoteLocation(remote)
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let tracking = try gitCall { try repository.resolveReference(Profile.trackingRef(remote)) }
        if head != tracking { return true }
        if case .path(let path) = location {
            // Read from the ref files: no libgit2 on an untrusted directory, and far cheaper.
            // A deletion notice there (`concord destroy`) is for the sync to judge.
            if FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent(DeletionNotice.fileName)) { return true }
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConcordError.offline(remote: remote, reason: "\(path) does not exist", localCommits: try profile.localCommits(remote))
            }
            do { return try Repository.localRemoteHead(at: path, ref: "refs/heads/main") != tracking } catch {
                throw try profile.transportError(error, remote: remote, location: location)
            }
        }
        let heads: [String: ObjectID]
        do {
            heads = try repository.remoteHeads(remote: remote, options: profile.transportOptions(for: identity, remote: remote, location: location))
        } catch {
            let failure = try profile.transportError(error, remote: remote, location: location)
            // A concord server saying the profile was deleted: the sync asks for the notice and judges it.
            if profile.isServerDeletion(failure, location: location) { return true }
            throw failure
        }
        return heads["refs/heads/main"] != tracking
    }

    // MARK: Remotes

    public func remotes() throws -> [(name: String, url: String)] {
        try gitCall { try repository.remotes() }
    }

    public func addRemote(_ name: String, url: String) throws {
        guard RecordID.isValid(name) else { throw ConcordError.invalidInput("invalid remote name \"\(name)\": use letters, digits, . _ -") }
        guard try gitCall({ try repository.remoteURL(name) }) == nil else { throw ConcordError.remoteExists(name) }
        let location = try RemoteLocation(url: url)
        try gitCall { try repository.addRemote(name, url: location.transportURL) }
    }

    public func removeRemote(_ name: String) throws {
        guard try gitCall({ try repository.remoteURL(name) }) != nil else { throw ConcordError.unknownRemote(name) }
        try gitCall { try repository.removeRemote(name) }
    }

    /// Connects to ssh remote `name`, and records the host key it presents as trusted in
    /// `$CONCORD_HOME/known_hosts`. Returns the fingerprint.
    public func trustRemote(_ name: String, identity: Identity) throws -> String {
        let location = try profile.remoteLocation(name)
        guard let hostName = location.knownHostsName else {
            throw ConcordError.invalidInput("\(name) is a path remote: there is no host key to trust")
        }
        var seen: HostKey?
        let options = TransportOptions(sshPrivateKey: identity.privateKeyPath.path, trustHostKey: { key in
            seen = key
            return true
        }, stallTimeout: environment.networkTimeout, knownHostLines: KnownHosts(home: environment.home).lines(for: hostName))
        do { _ = try repository.remoteHeads(remote: name, options: options) } catch {
            if seen == nil { throw try profile.transportError(error, remote: name, location: location) }
        }
        guard let key = seen else { throw ConcordError.io("\(name) presented no host key") }
        try KnownHosts(home: environment.home).trust(host: hostName, key: key)
        return key.fingerprint
    }

    /// The writes the merges among the commits after `start` up to `head` left out (none when this
    /// device had no history before: a first sync reports nothing of the past). The audit index is
    /// brought up to `head` first, from what the check already compared: it names the merges where
    /// both sides changed a record, and only those are read.
    private func lostEdits(from start: ObjectID?, to head: ObjectID, known: ChangedPaths) throws -> [LostEdit] {
        guard let start, start != head else { return [] }
        let merges = try gitCall { try repository.newCommits(from: head, excluding: [start]) }.filter { $0.parents.count == 2 }
        guard !merges.isEmpty else { return [] }
        profile.updateAuditIndex(known: known)
        return try profile.history.lostEdits(LostEditFilter(merges: Set(merges.map(\.id.hex))))
    }

    /// Merges `revision` (a branch, `refs/remotes/<remote>/main`, a commit id...) into this
    /// profile's branch: entirely in memory with the per-kind policies, then one signed merge
    /// commit, a compare-and-swap of the branch and a working-tree update. Never leaves a MERGING
    /// state. Files the policies cannot resolve keep our version; theirs is saved under
    /// `.concord/conflicts/` and listed in `unresolved`.
    public func merge(revision: String, as identity: Identity) throws -> MergeReport {
        let theirs = try gitCall { try repository.resolveRevision(revision) }
        return try merge(commit: theirs, as: identity)
    }

    public func merge(commit theirs: ObjectID, as identity: Identity) throws -> MergeReport {
        let lock = try profile.lock()
        defer { withExtendedLifetime(lock) {} }
        return try profile.mergeLocked(theirs, as: identity)
    }
}

extension Profile {
    /// This profile's remotes and sync.
    public var sync: Sync { Sync(profile: self) }
}
