import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

extension Sync {
    /// Fetches `remote`'s main, merges it with the policies (in memory, offline), moves `main` by
    /// compare-and-swap, and pushes without ever forcing. When the push loses a race with another
    /// device, fetches, merges and pushes again (bounded, with jitter). Commits nothing implicitly.
    ///
    /// The profile lock is held only for the local steps (check, admit, merge, ref updates): the
    /// fetch and the push run without it, so writes and reads of this profile are not kept
    /// waiting by the network (docs/architecture.md, "The sync pipeline").
    public func run(remote: String = "origin", as identity: Identity) throws -> SyncReport {
        try run(remote: remote, as: identity, prefetched: nil)
    }

    /// `run`, taking `prefetched` (what a concord server sent with a `concord-wait` answer) in place
    /// of the first fetch when it was made against what this device last fetched.
    package func run(remote: String, as identity: Identity, prefetched: PrefetchedPack?) throws -> SyncReport {
        // A long-running caller (`watch`) keeps this profile open across thousands of syncs: what
        // libgit2 cached during this one is let go, so memory does not grow with their number.
        defer { repository.releaseCaches() }
        let pipeline = try SyncPipeline(sync: self, remote: remote, identity: identity)
        var received = 0
        var sent = 0
        var changed = [String]()
        var resolved = [ResolvedConflict]()
        var unresolved = [UnresolvedFile]()
        var leftOut = [LeftOutChange]()
        var contested = [String]()
        var fallen = [FallenDecision]()
        var warnings = [String]()
        var rewound = false
        // The remote's history is judged against what this device last fetched once, at the first fetch admitted.
        var judged = false
        // The files each received commit changed, for the audit index once the local steps are done.
        let changedPaths = ChangedPaths()
        // With a pack from the server the remote moved: a push alone would be refused.
        if prefetched == nil, let report = try pushAhead(pipeline, identity: identity) {
            return report
        }
        let start = try gitCall { try repository.resolveReference("HEAD") }
        /// The report, with the writes the merges since `start` left out (under the lock).
        func finished(_ head: ObjectID, attempt: Int) throws -> SyncReport {
            var report = SyncReport(remote: remote, received: received, sent: sent, changedFiles: changed, resolved: resolved,
                                    unresolved: unresolved, head: head.hex, attempts: attempt, warnings: warnings, leftOut: leftOut,
                                    contested: contested)
            report.fallen = fallen
            report.lost = try lostEdits(from: start, to: head, known: changedPaths)
            report.yours = report.lost.filter { $0.loser.member == identity.member }
            return report
        }
        /// What the local steps of one attempt leave to do.
        enum Next {
            case fetchAgain
            case done(SyncReport)
            case push(head: ObjectID, expected: ObjectID?, outgoing: Int, objects: FetchedObjects)
        }
        for attempt in 1...Sync.maxSyncAttempts {
            // Quarantine and transport: the network, without the lock.
            let incoming = try pipeline.transport(prefetched: attempt == 1 ? prefetched : nil)
            defer { incoming.signatures.cancel() }   // nothing verifies on after the check (it waited for it all)
            // Check, admit, merge: under the lock.
            let next: Next = try locked(changedPaths) {
                // Another sync of this profile fetched meanwhile: what came is judged against a stale view.
                if try pipeline.hasMoved(since: incoming) { return .fetchAgain }
                let admitted = try pipeline.admit(try pipeline.check(incoming, changedPaths: changedPaths))
                let remoteTip = admitted?.tip
                // What the fetch read serves every step after it in this attempt (the merge, the check of what is sent, the report).
                let objects = admitted?.objects ?? .none
                if !judged, let lastFetched = incoming.lastFetched {
                    if let warning = try judgeRemoteHistory(remote: remote, lastFetched: lastFetched, now: remoteTip, rewound: &rewound) {
                        warnings.append(warning)
                    }
                }
                judged = true
                // Decisions count in the order they reached the remote: its main's first-parent line
                // must still hold what this device last fetched.
                if let lastFetched = incoming.lastFetched, let remoteTip { try refuseBrokenMainline(remote: remote, lastFetched: lastFetched, now: remoteTip) }
                if let admitted {
                    // A revocation of this device's member is final: nothing of theirs is merged or pushed.
                    // Not when main went back: what a rewound main says is older than what this device
                    // already fetched (a server replaying a revocation from before a re-invitation).
                    if !rewound { try profile.members.checkAccess(at: admitted.tip, for: identity) }
                    if let before = try gitCall({ try repository.resolveReference("HEAD") }) {
                        received += try gitCall { try repository.aheadBehind(local: before, upstream: admitted.tip).behind }
                    }
                    let report = try mergeLocked(admitted.tip, as: identity, fetched: objects)
                    changed += report.changedFiles
                    resolved += report.resolved
                    unresolved += report.unresolved
                    leftOut += report.leftOut
                    contested += report.contested
                    fallen += report.fallen
                    if let again = report.remerged { warnings.append(again) }
                }
                guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else {
                    throw ConcordError.emptyRemote(pipeline.location.transportURL)
                }
                if head == remoteTip {
                    try recordSync(remote: remote, head: head)
                    return .done(try repository.reading(objects) { try finished(head, attempt: attempt) })
                }
                let outgoing = try remoteTip.map { tip in try gitCall { try repository.aheadBehind(local: head, upstream: tip).ahead } }
                    ?? countCommits(head)
                try refuseUnpublishable(head, known: remoteTip, fetched: objects)
                return .push(head: head, expected: remoteTip, outgoing: outgoing, objects: objects)
            }
            switch next {
            case .fetchAgain:
                continue
            case .done(let report):
                return report
            case .push(let head, let expected, let outgoing, let objects):
                // Push: the network, without the lock (a compare-and-swap on the remote).
                if try push(head, expected: expected, remote: remote, location: pipeline.location, options: pipeline.options,
                                    attemptsLeft: Sync.maxSyncAttempts - attempt) {
                    return try locked(changedPaths) {
                        sent += outgoing
                        try recordPush(of: head, to: remote, replacing: expected)
                        return try repository.reading(objects) { try finished(head, attempt: attempt) }
                    }
                }
            }
            // Another device pushed first: fetch, merge and try again after a little jitter.
            usleep(useconds_t.random(in: 20_000...(60_000 * useconds_t(attempt))))
        }
        throw ConcordError.remoteKeptMoving(remote: remote, attempts: Sync.maxSyncAttempts)
    }

    /// Runs `body` holding the profile lock, then brings the audit index up to HEAD from what the
    /// check compared (`changedPaths`), still under the lock.
    private func locked<T>(_ changedPaths: ChangedPaths, _ body: () throws -> T) throws -> T {
        try profile.locked {
            defer { AuditIndex(repository: repository).update(known: changedPaths) }
            return try body()
        }
    }

    /// Refuses a remote main `now` that holds `lastFetched` (what this device last fetched) off its
    /// first-parent line: decisions take effect in the order they reached the remote, along that line
    /// (docs/security.md), and a merge that put another line first would reorder them. The tracking
    /// ref goes back, so the next sync refuses it again, and nothing is merged.
    private func refuseBrokenMainline(remote: String, lastFetched: ObjectID, now remoteTip: ObjectID) throws {
        guard try gitCall({ try repository.isAncestor(lastFetched, of: remoteTip) }),
              try !gitCall({ try repository.isOnFirstParentLine(lastFetched, of: remoteTip) }) else { return }
        try gitCall {
            try repository.updateReference(Sync.trackingRef(remote), to: lastFetched, expected: remoteTip, message: "concord: refused a broken main line")
        }
        throw ConcordError.mainlineBroken(remote: remote, was: lastFetched.short, now: remoteTip.short)
    }

    /// Compares the remote's main now (`now`, nil when deleted) with what this device last fetched,
    /// at a sync's first fetch; returns what the user should be told. Deleted, or rewound to an
    /// older commit (`rewound` set): this device's history is pushed back. Rewritten, with commits
    /// pushed on top since (checked like any others): the commits it dropped are still here. When
    /// they changed only records, they are merged with the new ones and pushed back. When they
    /// changed the profile's own files (members, invitations, kinds), the new history may rest on
    /// access they took away (a revocation dropped so that a revoked member's commits pass):
    /// nothing of it is merged, and the tracking ref goes back, so the next sync refuses it again.
    private func judgeRemoteHistory(remote: String, lastFetched: ObjectID, now remoteTip: ObjectID?, rewound: inout Bool) throws -> String? {
        guard let remoteTip else {
            try gitCall { try repository.deleteReference(Sync.trackingRef(remote)) }
            return "\(remote)'s main had been deleted (it was at \(lastFetched.short)); this device's history is pushed back"
        }
        guard remoteTip != lastFetched else { return nil }
        if try gitCall({ try repository.isAncestor(remoteTip, of: lastFetched) }) {
            rewound = true
            return "\(remote)'s main went back from \(lastFetched.short) to \(remoteTip.short) (rewound on the server); this device's history is pushed back"
        }
        guard try !gitCall({ try repository.isAncestor(lastFetched, of: remoteTip) }) else { return nil }
        let dropped = try gitCall { try repository.newCommits(from: lastFetched, excluding: [remoteTip]) }
        if let commit = try firstChangingProfileFiles(dropped) {
            try gitCall {
                try repository.updateReference(Sync.trackingRef(remote), to: lastFetched, expected: remoteTip,
                                               message: "concord: refused a rewritten main")
            }
            throw ConcordError.remoteRewritten(remote: remote, was: lastFetched.short, now: remoteTip.short,
                                               dropped: dropped.count, changingAccess: commit.short)
        }
        return "\(remote)'s main was rewritten on the server: it is now \(remoteTip.short), without \(dropped.count) "
            + "commit(s) up to \(lastFetched.short) that this device has (they changed records only); they are merged "
            + "with the new commits and pushed back"
    }
}
