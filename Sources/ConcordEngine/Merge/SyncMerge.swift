import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// What merging another line of history did.
public struct MergeReport: Sendable {
    /// Whether the merge found nothing to do, moved main forward, or made a merge commit.
    public enum Outcome: String, Sendable { case upToDate = "up-to-date", fastForward = "fast-forward", merged }

    /// What the merge did.
    public let outcome: Outcome
    /// The branch tip afterwards.
    public let head: String
    /// Files whose content changed in the working tree.
    public let changedFiles: [String]
    /// How many of those files are now live records (not tombstones, not log files).
    public var liveRecordsWritten: Int = 0
    /// Conflicts the kinds' policies resolved.
    public let resolved: [ResolvedConflict]
    /// Files no policy could merge.
    public let unresolved: [UnresolvedFile]
    /// Files whose change by a member who lost their rights concurrently the merge left out.
    public var leftOut: [LeftOutChange] = []
    /// Members both sides admitted at once with different keys (two Admins adding one name): the
    /// merge admits neither, and an Admin must add or invite them again.
    public var contested: [String] = []
    /// Membership decisions of the merged-in line that do not count: made on a copy older than what
    /// the main line (the remote's main) decided meanwhile (docs/security.md).
    public var fallen: [FallenDecision] = []
    /// What made this device's own line again, in a sentence: a `concord merge` of a peer's branch
    /// that held commits the remote's main took meanwhile, or a merge of its own that took them as
    /// its side (docs/security.md, "The mainline").
    public var remerged: String?
}

/// A membership decision (a revocation, a role or key change, a join…) that a merge left out: it
/// was made on a copy older than the main line's, and by the time it reached the main line its
/// signer no longer had the right, or what it acted on was gone. It stays in history.
public struct FallenDecision: Sendable, Equatable {
    /// Its commit (hex).
    public let commit: String
    /// The member who signed it (nil: no member holds the key that signed it).
    public let member: String?
    /// What it did, in a few words (`revocation of jay`, `change of jay's role`, `join as zed`).
    public let what: String
    /// Why it does not count.
    public let reason: String

    /// How the device of `member` is told (`your revocation of jay … does not count: …`), and any other.
    public func line(for reader: String) -> String {
        let whose = member == reader ? "your" : "\(member ?? "an unknown key")'s"
        return "\(whose) \(what) (commit \(commit.prefix(7))) was made on a copy older than the main line's and does not count: \(reason)"
    }

    init(_ fallen: MembershipResolution.FallenDecision) {
        (commit, member, what, reason) = (fallen.commit, fallen.signer, fallen.what, fallen.reason)
    }
}

/// A file a merge took from the other side because the member who changed it lost, concurrently,
/// the rights to change it (revoked or demoted; docs/security.md). The change stays in history.
public struct LeftOutChange: Sendable, Equatable {
    /// The file the merge took from the other side.
    public let path: String
    /// The member who changed it without the rights to.
    public let member: String
    /// Their newest commit that changed it (hex).
    public let commit: String
    /// What took the right to make it away.
    public let cause: LeftOutCause
}

/// What took away a member's right to a change a merge left out.
public enum LeftOutCause: Sendable, Equatable {
    /// The main line revoked or demoted them (or took away the Admin who admitted or promoted them).
    case rightsLowered
    /// The main line removed the device key that signed it.
    case keyRemoved(fingerprint: String)
    /// The kinds where it lands do not let them write it (the main line's, with the side's kinds
    /// changes before it that stand: an Admin's kinds change that fell, or one restricting who writes a kind).
    case kindsChanged
}

/// Which side of a merge is the main line, its first parent (docs/security.md, "Decisions in the
/// order they reached the remote"): the other side's decisions are judged against it.
enum MergeMainLine: Sendable {
    /// What is merged in is a remote's main (a sync, a clone, `concord merge origin/main`).
    case theirs
    /// This device's line (`concord merge` of a peer's branch or a commit id): what is merged in
    /// is a side, as it would be were it pushed on top of this device's main.
    case head
}

extension Sync {
    /// `merge(revision:as:)` for a caller that already holds the profile lock. `fetched`: what the
    /// fetch that brought `theirs` read and hashed, read by the merge and checkout before the
    /// object database (a clone's checkout writes every record from there).
    func mergeLocked(_ theirs: ObjectID, as identity: Identity, mainLine: MergeMainLine = .theirs, fetched: FetchedObjects = .none) throws -> MergeReport {
        try repository.reading(fetched) { try mergeRetrying(theirs, mainLine: mainLine, as: identity) }
    }

    private func mergeRetrying(_ theirs: ObjectID, mainLine: MergeMainLine, as identity: Identity) throws -> MergeReport {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try mergeOnce(theirs: theirs, mainLine: mainLine, identity: identity)
            } catch let error as GitError where error.code == .modified && attempt < Records.maxWriteAttempts {
                continue
            } catch let error as GitError {
                throw ConcordError.git(error)
            }
        }
    }

    private func mergeOnce(theirs: ObjectID, mainLine: MergeMainLine, identity: Identity) throws -> MergeReport {
        let branch = try repository.headBranch()
        guard let head = try repository.resolveReference("HEAD") else {
            return try moveBranch(branch, .fastForward, from: nil, to: theirs, message: "concord: initial merge", resolved: [], unresolved: [])
        }
        // A remote's main is the main line: a merge puts it first, and head is up to date only when
        // `theirs` is on its first-parent line. A head that holds it on a side line only (a plain
        // `git pull` put this device's line first) is merged again with `theirs` first.
        if mainLine == .theirs ? try repository.isOnFirstParentLine(theirs, of: head) : try head == theirs || repository.isAncestor(theirs, of: head) {
            return MergeReport(outcome: .upToDate, head: head.hex, changedFiles: [], resolved: [], unresolved: [])
        }
        // A fast-forward takes `theirs`'s first-parent line as this device's main line: for a remote's
        // main that is the point; for anything else only when head is on that line, so that a commit
        // whose own main line is an old fork (a merge putting it first, head second) is merged in as
        // a side like any other, never taken whole.
        if try repository.isAncestor(head, of: theirs), try mainLine == .theirs || repository.isOnFirstParentLine(head, of: theirs) {
            return try moveBranch(branch, .fastForward, from: head, to: theirs, message: "concord: fast-forward", resolved: [], unresolved: [])
        }
        let (main, side) = mainLine == .theirs ? (theirs, head) : (head, theirs)
        // What reached main counts first, also through a merge on the side: such a merge is not made.
        if let problem = try CommitAuthorizer(repository: repository, caches: caches).sideMergeOrderProblem(mainLine: main, side: side) {
            // On this device's own line (a `concord merge` of a peer's branch that held commits the
            // remote's main has since taken, or that holds such a merge itself): made again.
            if mainLine == .theirs, try problem.merge.id == head || repository.isAncestor(problem.merge.id, of: head) {
                return try makeAgain(around: problem, head: head, theirs: theirs, branch: branch, identity: identity)
            }
            throw ConcordError.unauthorizedCommit(commit: problem.merge.id.short, signer: problem.merge.author.name, change: nil, reason: "it " + problem.reason)
        }
        return try makeMerge(main: main, side: side, ours: head, identity: identity).move(branch, from: head, in: self)
    }

    /// This device's line made again around merge `problem` (on it, unpublished), which took commits
    /// of `theirs` (the remote's main) as its side: the merge X on the first-parent line that holds it
    /// (the merge itself, or the one that brought it in) and what this device committed after X.
    ///
    /// - `theirs` with X's first parent merged in as the side (main first);
    /// - when X is the problem merge itself (this device merged a peer's branch its own line first):
    ///   that branch on top, as a side; when X brought it in (the peer's branch holds it): the
    ///   branch is left out, and its author merges again with `concord sync`;
    /// - each commit after X made again on top: its changes applied (a record or log file both lines
    ///   changed merged by its kind's policy), with its message, signed by this device.
    ///
    /// The old line is kept under `refs/concord/set-aside/<time>`. Refused, changing nothing, when a
    /// commit after X is not this device's own non-merge commit, X is not this device's merge of a
    /// line not yet on the remote's main, or a change cannot be applied: the line then needs the
    /// hand the refusal describes.
    private func makeAgain(around problem: (merge: Commit, reason: String), head: ObjectID, theirs: ObjectID, branch: String,
                           identity: Identity) throws -> MergeReport {
        let p = problem.merge
        var later = [Commit](), x = try repository.commit(head)
        while x.id != p.id, let first = x.parents.first, try first == p.id || repository.isAncestor(p.id, of: first) {
            later.append(x)
            x = try repository.commit(first)
        }
        let own = identity.key.publicKey
        func refusal(_ why: String) -> ConcordError {
            .invalidInput(.historyState, "this device's line holds merge \(p.id.short), which \(problem.reason); \(why): nothing was changed",
                          remedy: .remakeOwnLine(resetTo: x.parents.first?.short ?? x.id.short))
        }
        guard x.parents.count == 2, try MembershipResolution.signer(of: x, in: repository, caches: caches) == own else {
            throw refusal("the merge that brought it in, \(x.id.short), is not this device's")
        }
        let line = x.parents[0], peer = x.parents[1]
        let onMain = try repository.isAncestor(line, of: theirs)
        guard x.id == p.id || !onMain else { throw refusal("it came in with this device's own line, \(peer.short)") }
        for commit in later where try commit.parents.count != 1 || MembershipResolution.signer(of: commit, in: repository, caches: caches) != own {
            throw refusal("commit \(commit.id.short), after it, is not this device's own non-merge commit")
        }
        let authorizer = CommitAuthorizer(repository: repository, caches: caches)
        var made: MadeMerge?, tip = theirs
        if !onMain {
            guard try authorizer.sideMergeOrderProblem(mainLine: theirs, side: line) == nil else {
                throw refusal("this device's line before it, \(line.short), holds another such merge")
            }
            made = try makeMerge(main: theirs, side: line, ours: line, identity: identity)
            tip = made!.commit
        }
        let note: String
        if x.id == p.id {
            if try !repository.isAncestor(peer, of: tip) {
                guard try authorizer.sideMergeOrderProblem(mainLine: tip, side: peer) == nil else {
                    throw refusal("the line it merged, \(peer.short), holds another such merge")
                }
                let again = try makeMerge(main: tip, side: peer, ours: tip, identity: identity)
                made = made.map { $0.followed(by: again) } ?? again
                tip = again.commit
            }
            note = "this device's merge \(x.id.short) was made again, the remote's main first: what it merged in held commits the remote's "
                + "main took meanwhile"
        } else {
            note = "this device's merge \(x.id.short) of \(peer.short) was undone: that line holds merge \(p.id.short), which \(problem.reason); "
                + "its author syncs again"
        }
        for commit in later.reversed() { tip = try replay(commit, onto: tip, identity: identity, refusal: refusal) }
        let kept = try SetAside.newRef(SetAside.refPrefix) { name in try repository.resolveReference(name) != nil }
        try repository.updateReference(kept, to: head, expected: nil, message: "concord: the line before it was made again")
        var report = try moveBranch(branch, made == nil && later.isEmpty ? .fastForward : .merged, from: head, to: tip,
                                    message: "concord: merge again", resolved: made?.resolved ?? [], unresolved: made?.unresolved ?? [])
        if let made {
            (report.fallen, report.leftOut, report.contested) = (made.fallen, made.leftOut, made.contested)
            try profile.clock.save(made.stamp)
        }
        report.remerged = note + (later.isEmpty ? "" : "; \(later.count) of this device's commits after it made again on top")
            + " (the line before is kept under \(kept))"
        return report
    }

    /// This device's own commit `commit` made again on `tip`: its changes applied to `tip`'s tree (a
    /// record or log file `tip` changed too merged by its kind's policy), its message and author
    /// kept, signed by `identity`.
    private func replay(_ commit: Commit, onto tip: ObjectID, identity: Identity, refusal: (String) -> ConcordError) throws -> ObjectID {
        let ourTree = try repository.commit(tip).tree
        let kinds = try repository.blob(KindsTable.path, atCommit: tip).flatMap { try? KindsTable.decode($0) } ?? .empty
        var edits = [TreePath: ObjectID?]()
        func blob(_ value: TreeEntryValue?) -> ObjectID? { if case .file(let id)? = value { id } else { nil } }
        for change in try repository.treeChanges(from: try repository.commit(commit.parents[0]).tree, to: commit.tree) {
            let path = String(decoding: change.path, as: UTF8.self)
            let ours = try repository.entry(at: path, inTree: ourTree).flatMap { $0.kind == .blob ? $0.id : nil }
            let (base, theirs) = (blob(change.old), blob(change.new))
            if ours == theirs { continue }
            if ours == base {
                edits[try treePath(path)] = .some(theirs)
                continue
            }
            let policy: MergePolicy? = switch ProfilePathRules.classify(change.path, kinds: kinds) {
            case .success(.record(let kind, _)), .success(.logDay(let kind, _)): kind.policy
            default: nil
            }
            guard let policy, let ours, let theirs,
                  case .merged(let bytes, _) = RecordMerge.merge(policy: policy, base: try base.map { try repository.blob($0) },
                                                                 ours: try repository.blob(ours), theirs: try repository.blob(theirs)) else {
                throw refusal("\(path), which commit \(commit.id.short) after it changed, changed on the main line too and cannot be merged")
            }
            edits[try treePath(path)] = .some(try repository.writeBlob(bytes))
        }
        return try repository.createSignedCommit(tree: try repository.writeTree(base: ourTree, edits: edits), parents: [tip],
                                                 author: commit.author, message: commit.message, sign: { identity.sign($0) })
    }

    /// A merge commit made and stored, not yet on the branch, with what the report says of it.
    fileprivate struct MadeMerge {
        let commit: ObjectID
        let stamp: HLC
        var resolved: [ResolvedConflict]
        var unresolved: [UnresolvedFile]
        var fallen: [FallenDecision]
        var leftOut: [LeftOutChange]
        var contested: [String]

        /// `next`, made on top of this one, with what both report.
        func followed(by next: MadeMerge) -> MadeMerge {
            MadeMerge(commit: next.commit, stamp: next.stamp, resolved: resolved + next.resolved, unresolved: unresolved + next.unresolved,
                      fallen: fallen + next.fallen, leftOut: leftOut + next.leftOut, contested: contested + next.contested)
        }

        /// Moves `branch` from `head` to the merge, and saves its stamp as the clock's.
        func move(_ branch: String, from head: ObjectID, in sync: Sync) throws -> MergeReport {
            var report = try sync.moveBranch(branch, .merged, from: head, to: commit, message: "concord: merge", resolved: resolved, unresolved: unresolved)
            (report.fallen, report.leftOut, report.contested) = (fallen, leftOut, contested)
            try sync.profile.clock.save(stamp)
            return report
        }
    }

    /// The signed merge of `side` into `main` (its first parent), made and stored, with `ours` this
    /// device's line (`main` or `side`): refused when it would admit an invitation twice, overfill an
    /// open one, or take this device's own membership away.
    private func makeMerge(main: ObjectID, side: ObjectID, ours head: ObjectID, identity: Identity) throws -> MadeMerge {
        let theirs = main == head ? side : main
        // An invitation admits once: two acceptances of it on two lines of history are never merged.
        let admittedTwice = try MembershipResolution.admittedTwice(in: repository, ours: main, theirs: side, caches: caches)
        if let twice = admittedTwice.first(where: \.wasInvited)?.member {
            let reason = twice.name == identity.member
                ? "another device accepted it with another key, and that acceptance reached the remote first; ask \(twice.addedBy) for a new invitation"
                : "it was accepted on two devices with different keys (in \(head.short) and \(theirs.short)); the acceptance on the remote "
                    + "stands, and the other device asks \(twice.addedBy) for a new invitation"
            throw ConcordError.invitationRefused(member: twice.name, reason: reason)
        }
        if let (invitation, joiners) = try MembershipResolution.overfilledInvitations(in: repository, ours: main, theirs: side, caches: caches).first {
            let mine = try joiners.contains(identity.member)
                || CommitAuthorizer.membership(in: repository, tree: repository.commit(head).tree, caches: caches).members[identity.member]?.invitation == invitation.id
            throw ConcordError.invitationRefused(member: mine ? identity.member : joiners[0], reason: "all \(invitation.uses) places of open "
                + "invitation \(invitation.id) were taken by others on another line of history (\(head.short) and \(theirs.short) "
                + "cannot be merged); ask \(invitation.invitedBy) for a new invitation")
        }
        let merge = try PolicyMerge.compute(in: repository, ours: main, theirs: side, caches: caches)
        let (tree, planner, unresolved) = (merge.tree, merge.planner, merge.unresolved)
        // A merge that takes this device's own membership away (its admission or rights rested on an
        // Admin revoked or demoted concurrently) is not made: the device is told, as by a revocation.
        if let mine = try CommitAuthorizer.membership(in: repository, tree: tree, caches: caches).members[identity.member], mine.status != .active,
           try CommitAuthorizer.membership(in: repository, tree: try repository.commit(head).tree, caches: caches).members[identity.member]?.status == .active {
            if let fallen = merge.resolution.fallen.first(where: { $0.signer == identity.member && ($0.what.hasPrefix("join as") || $0.what.hasPrefix("acceptance as")) }) {
                throw ConcordError.invitationRefused(member: identity.member, reason: FallenDecision(fallen).line(for: identity.member))
            }
            if mine.status == .invited {
                // Its own acceptance met another of the same invitation, with another key: nobody wins.
                throw ConcordError.invitationRefused(member: identity.member, reason: "it was also accepted on another device with another "
                    + "key, so neither is admitted and \(identity.member) stays invited; ask \(mine.addedBy) for a new invitation")
            }
            // Revoked by an Admin's decision the merge brings in, or left admitting nobody when the admission fell.
            let by = mine.status == .revoked ? mine.revokedBy.flatMap { $0 == identity.member ? nil : $0 } : nil
            throw ConcordError.accessRemoved(member: identity.member, by: by ?? "the revocation or demotion, on the main line, of the Admin who admitted \(identity.member)",
                                             profile: profile.info.name)
        }
        let (ourTree, theirTree) = (try repository.commit(main).tree, try repository.commit(side).tree)   // as the policy merge's
        let resolved = try planner.conflicts { paths in
            zip(try repository.entries(at: paths, inTree: ourTree), try repository.entries(at: paths, inTree: theirTree))
                .map { ($0?.id, $1?.id) }
        }
        // After all the branch holds, what a plain `git pull` brought included; `theirs` is taken
        // in by `WorkingTree.update` below, and its commits by the next write's `LocalClock.seeing`.
        let stamp = HLClock(wallClock: environment.wallClock).next(after: try profile.clock.seeing(head))
        var message = CommitMessage(
            summary: "merge \(side.short) into \(main.short)" + (resolved.isEmpty ? "" : ": \(resolved.count) conflicts resolved"),
            actor: identity, action: .merged, stamp: stamp, references: [])
        message.extraTrailers = resolved.map { "Concord-Resolved: \($0.trailerValue)" }
            + unresolved.map { "Concord-Unresolved: \($0.path)" + ($0.savedAs.map { " saved=\($0)" } ?? "") }
            + merge.leftOut.map { "Concord-Left-Out: \($0.trailerValue)" }
        let commit = try repository.createSignedCommit(
            tree: tree, parents: [main, side], author: GitSignature(name: identity.member, email: CommitWriter.email(identity), time: environment.wallClock() / 1000),
            message: message.text, sign: { identity.sign($0) })
        // A name two Admins added at once: the merge admits neither.
        let merged = admittedTwice.isEmpty ? [:] : try CommitAuthorizer.membership(in: repository, tree: tree, caches: caches).members
        return MadeMerge(commit: commit, stamp: stamp, resolved: resolved, unresolved: unresolved,
                         fallen: merge.resolution.fallen.map(FallenDecision.init),
                         leftOut: merge.leftOut.map { LeftOutChange(path: $0.path, member: $0.member, commit: $0.commit.hex, cause: $0.cause) },
                         contested: admittedTwice.map(\.member.name).filter { merged[$0]?.status != .active })
    }

    /// Moves `branch` from `old` to `new` (compare-and-swap) and brings the working tree and index
    /// along. Every object `new` needs is already stored. Before the branch moves: the files to
    /// change are checked for uncommitted edits (refused, nothing changed), and journaled, so if
    /// the working tree or index cannot be written now (a disk error, a kill), the
    /// next command to take the profile lock finishes the job (`WorkingTree.restoreJournaledPaths`).
    /// git's `index.lock` is held from before the branch moves until the index follows it
    /// (`CommitWriter.commit` says why).
    fileprivate func moveBranch(_ branch: String, _ outcome: MergeReport.Outcome, from old: ObjectID?, to new: ObjectID, message: String,
                            resolved: [ResolvedConflict], unresolved: [UnresolvedFile]) throws -> MergeReport {
        try repository.holdingGitIndexLock {
            try moveBranchHoldingIndexLock(branch, outcome, from: old, to: new, message: message, resolved: resolved, unresolved: unresolved)
        }
    }

    private func moveBranchHoldingIndexLock(_ branch: String, _ outcome: MergeReport.Outcome, from old: ObjectID?, to new: ObjectID,
                                            message: String, resolved: [ResolvedConflict], unresolved: [UnresolvedFile]) throws -> MergeReport {
        let oldTree = try old.map { try repository.commit($0).tree }
        let newTree = try repository.commit(new).tree
        let files = try repository.changedFiles(from: oldTree, to: newTree)
        caches.treeChanges.remember(from: oldTree, to: newTree, files: files)   // for the record index's catch-up
        if old != nil { try profile.workingTree.refuseOverwritingLocalEdits(files) }
        let journal = CheckoutJournal(gitDirectory: repository.gitDirectory)
        if !files.isEmpty {
            try journal.record(files.map { CheckoutJournal.Entry(path: $0.path.string, before: $0.before, after: $0.blob) }, durable: false)
        }
        do {
            try repository.updateReference(branch, to: new, expected: old, message: message)
        } catch {
            journal.remove()
            throw error
        }
        let paths: [String], liveRecords: Int
        do {
            (paths, liveRecords) = try profile.workingTree.update(files, to: newTree)
        } catch {
            throw CommitWriter.unfinished(new, error, moved: true)   // the journal stays for the next command
        }
        journal.remove()
        var report = MergeReport(outcome: outcome, head: new.hex, changedFiles: paths, resolved: resolved, unresolved: unresolved)
        report.liveRecordsWritten = liveRecords
        return report
    }
}

extension Repository {
    /// The bytes of `path` in commit `id`, or nil.
    func blob(_ path: String, atCommit id: ObjectID) throws -> [UInt8]? {
        try entry(at: path, inTree: try commit(id).tree).map { try blob($0.id) }
    }
}
