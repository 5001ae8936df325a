import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

extension Sync {
    /// The first of `commits` that changes a file access depends on (a member file, an open
    /// invitation, kinds.json, profile.json) against any of its parents, if one does. Conflict
    /// copies under `.concord/conflicts/` are data, not access.
    func firstChangingProfileFiles(_ commits: [Commit]) throws -> ObjectID? {
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
    func pushAhead(_ pipeline: SyncPipeline, identity: Identity) throws -> SyncReport? {
        let (remote, location, options) = (pipeline.remote, pipeline.location, pipeline.options)
        guard case .ssh = location,
              let head = try gitCall({ try repository.resolveReference("HEAD") }),
              let tracking = try gitCall({ try repository.resolveReference(Sync.trackingRef(remote)) }),
              head != tracking, try gitCall({ try repository.isAncestor(tracking, of: head) }) else { return nil }
        // As `run` after a fetch that brings nothing: a device whose member was revoked pushes nothing.
        try profile.members.checkAccess(at: tracking, for: identity)
        let outgoing = try gitCall { try repository.aheadBehind(local: head, upstream: tracking).ahead }
        try refuseUnpublishable(head, known: tracking)
        do {
            guard try push(head, expected: tracking, remote: remote, location: location, options: options,
                                   attemptsLeft: Sync.maxSyncAttempts) else { return nil }
        } catch let error as ConcordError {
            switch error {
            case .offline, .untrustedHost, .authenticationFailed: throw error
            default: return nil
            }
        }
        try profile.locked { try recordPush(of: head, to: remote, replacing: tracking) }
        return SyncReport(remote: remote, received: 0, sent: outgoing, changedFiles: [], resolved: [], unresolved: [], head: head.hex,
                          attempts: 1, warnings: [])
    }

    /// A device never publishes what it would refuse: this device's commits up to `head` that the
    /// remote (at `known`) lacks pass the check every other device runs on them (`IncomingCheck`:
    /// signatures, roles, merges against their recomputed policy merge, structure), or the sync stops
    /// here, sending nothing (a commit made with plain git on this copy, unsigned or outside the role).
    /// `fetched`: what the fetch this sync merged read (a merge's recomputation reads it again).
    func refuseUnpublishable(_ head: ObjectID, known: ObjectID?, fetched: FetchedObjects = .none) throws {
        var check = IncomingCheck(repository: repository, profileID: profile.info.id, caches: profile.caches)
        check.fetched = fetched
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

    /// After `head` was pushed to `remote` in place of `expected` (under the lock): the tracking ref
    /// moves to it (the push does not move it: path pushes bypass libgit2, ssh pushes use an
    /// anonymous remote) and the sync's time is recorded. The push ran without the lock: when the
    /// tracking ref moved meanwhile (another sync of this profile fetched after the push), it
    /// already stands at what the remote showed later and stays there.
    func recordPush(of head: ObjectID, to remote: String, replacing expected: ObjectID?) throws {
        let tracking = try gitCall { try repository.resolveReference(Sync.trackingRef(remote)) }
        if tracking != head, tracking == expected {
            try gitCall { try repository.updateReference(Sync.trackingRef(remote), to: head, expected: tracking, message: "concord: pushed") }
        }
        try recordSync(remote: remote, head: head)
    }

    /// The writes the merges among the commits after `start` up to `head` left out (none when this
    /// device had no history before: a first sync reports nothing of the past). The audit index is
    /// brought up to `head` first, from what the check already compared: it names the merges where
    /// both sides changed a record, and only those are read.
    func lostEdits(from start: ObjectID?, to head: ObjectID, known: ChangedPaths) throws -> [LostEdit] {
        guard let start, start != head else { return [] }
        let merges = try gitCall { try repository.newCommits(from: head, excluding: [start]) }.filter { $0.parents.count == 2 }
        guard !merges.isEmpty else { return [] }
        AuditIndex(repository: repository).update(known: known)
        return try profile.history.lostEdits(LostEditFilter(merges: Set(merges.map(\.id.hex))))
    }
}
