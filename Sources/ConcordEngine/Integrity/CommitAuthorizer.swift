import ConcordGit
import ConcordModel
import ConcordRules
import ConcordTrust

/// Applies the validity rule (ConcordRules: `AccessRule`, `CommitRule`, `Acceptance`; rules 1–5 of
/// docs/security.md) to commits of a repository: reads each commit's SSHSIG signature and the
/// membership and kinds in force at its parents (and at their policy merge, for a merge), hands them
/// to the rule as values, and refuses with `ConcordError.unauthorizedCommit`.
///
/// Membership is read from the PARENT's tree, never the working tree or a later commit, so a
/// commit that changes membership is judged by the membership just before it (rule 4). Parsed
/// memberships (for the process) and kinds tables are kept by the object id of the members tree and the kinds blob:
/// a run of commits that leave both alone costs one Ed25519 verification each plus the tree diff
/// the structural check already made.
package final class CommitAuthorizer {
    let repository: Repository
    var kindsTables: [ObjectID: KindsTable] = [:]
    var rootID: ObjectID?
    /// The trees of commits known by id (the new commits being checked), so that a parent's tree
    /// is not read again through libgit2; other commits are read.
    var commitTrees: [ObjectID: ObjectID] = [:]
    /// The membership and the kinds table at each tree asked about lately (`membership(at:)`,
    /// `kindsTable(at:)`): one commit's check asks them of its parent's tree and its own several
    /// times, and the next commit's parent is this one's tree; each miss costs a walk down
    /// `.concord/`. Bounded: emptied at `treeAnswersLimit` trees.
    var membershipsAtTree: [ObjectID: Membership] = [:]
    var kindsTablesAtTree: [ObjectID: KindsTable] = [:]
    /// The data format of each `profile.json` blob read (`checkRecordStamps`).
    var formatsByBlob: [ObjectID: Int] = [:]
    static let treeAnswersLimit = 256

    /// The engine's caches (memberships, signatures, policy merges) this check reads through.
    let caches: EngineCaches

    init(repository: Repository, caches: EngineCaches) {
        self.repository = repository
        self.caches = caches
    }

    /// What a commit's signature says on its own, before any membership is consulted.
    enum SignatureCheck: Sendable {
        case unsigned
        case bad(TrustError)
        /// A good signature by this key.
        case good(SSHPublicKey)

        /// What `SSHSignature.verify` says of `signed`.
        init(verifying signed: CommitSignature) {
            do throws(TrustError) {
                self = .good(try SSHSignature.verify(signed.signature, message: signed.signedData))
            } catch {
                self = .bad(error)
            }
        }
    }

    /// The signatures of `commits`, read from the repository (by the one thread that uses it).
    func signatures(of commits: ArraySlice<Commit>) throws -> [CommitSignature?] {
        try commits.map { commit -> CommitSignature? in
            do { return try repository.signature(ofCommit: commit.id) } catch let error as GitError {
                throw ConcordError.invalidCommit(commit: commit.id.short, path: nil, reason: "its signature cannot be read (\(error.message))")
            }
        }
    }

    /// Verifies each of `signatures`, in order; `memo` answers those it was asked before.
    static func verify(_ signatures: [CommitSignature?], memo: SignatureMemo? = nil) -> [SignatureCheck] {
        signatures.map { signed -> SignatureCheck in
            guard let signed else { return .unsigned }
            return memo?.check(signed) ?? SignatureCheck(verifying: signed)
        }
    }

    /// Checks `commit` (whose changes against its first parent are `changes`, and whose signature
    /// says `signature`); returns who signed it.
    @discardableResult
    func authorize(_ commit: Commit, changes: [TreeChange], signature: SignatureCheck) throws -> CommitSigner {
        func refuse(_ signer: String, _ change: String?, _ reason: String) -> ConcordError {
            .unauthorizedCommit(commit: commit.id.short, signer: signer, change: change, reason: reason)
        }
        func refuse(_ signer: String, by violation: Violation) -> ConcordError { refuse(signer, violation.change, violation.reason) }
        do {
            // Rule 1: a good signature by an active member of the parent (the root: an Admin of its own tree).
            let key: SSHPublicKey
            switch signature {
            case .unsigned:
                throw refuse(commit.author.name, nil, "it is not signed; every commit must be signed with a member's device key")
            case .bad(let error):
                throw refuse(commit.author.name, nil, "its signature does not verify (\(error.localizedDescription))")
            case .good(let signer):
                key = signer
            }
            let parentTrees = try commit.parents.map { try commitTrees[$0] ?? repository.commit($0).tree }
            // Rule 3: a merge is judged by what merging its parents must give, never by the parent its
            // signer put first (they chose it). Concord never writes more than two parents.
            // How a refusal names the signer: as the first parent's membership does (nil: no one there).
            func label(in tree: ObjectID?) throws -> String? {
                guard let tree, let holder = try membership(at: tree).holders(of: key).first else { return nil }
                return "\(holder.member.name)@\(holder.device)"
            }
            if let problem = CommitRule.parentCountProblem(commit.parents.count) {
                throw refuse(try label(in: parentTrees.first) ?? commit.author.name, nil, problem)
            }
            // An invitation admits once: no merge brings two acceptances of it together (whoever signs it).
            if commit.parents.count == 2,
               let twice = try MembershipResolution.admittedTwice(in: repository, ours: commit.parents[0], theirs: commit.parents[1], caches: caches)
                   .first(where: \.wasInvited)?.member {
                throw refuse(try label(in: parentTrees[0]) ?? label(in: parentTrees[1]) ?? commit.author.name, by: CommitRule.admittedTwice(twice))
            }
            let policy = commit.parents.count == 2
                ? try PolicyMerge.tree(in: repository, ours: commit.parents[0], theirs: commit.parents[1], caches: caches, candidate: commit.tree) : nil
            let decided = if let policy {
                // Its signer must be active, with this key, in the MERGED membership of its parents: the
                // policy merge's, where a revocation on either side wins and membership changes resting on
                // a member revoked concurrently fall (`MembershipResolution`).
                AccessRule.signer(key, in: try membership(at: policy))
            } else if let parentTree = parentTrees.first {
                AccessRule.signer(key, in: try membership(at: parentTree))
            } else {
                AccessRule.rootSigner(key, in: try membership(at: commit.tree))
            }
            let signer: CommitSigner
            switch decided {
            case .failure(let refusal):
                // The one commit an invited member signs: their acceptance (rule 1's exception).
                switch try acceptance(commit, changes: changes, key: key, parentTree: parentTrees.first) {
                case .accepted(let accepted):
                    try checkMemberFiles(commit, changes: changes, parentTrees: parentTrees, signer: accepted, judged: accepted.member)
                    return accepted
                case .refused(let signer, let violation):
                    throw refuse(signer, by: violation)
                case .none:
                    break
                }
                if let policy {
                    // Named as a parent knows them: a member whose admission fell has no key left in the merge.
                    let (signer, reason) = CommitRule.mergeSignerRefusal(key: key, merged: try membership(at: policy),
                                                                         parents: try parentTrees.map(membership(at:)), label: refusal.signer)
                    throw refuse(signer, nil, reason)
                }
                throw refuse(refusal.signer, nil, refusal.reason)
            case .success(let found): signer = found
            }
            // Whom the commit is judged as: its signer, or the member acting on the signer's device.
            let trailers = CommitTrailers(message: commit.message)
            let parentTree = parentTrees.first
            var judged: Member
            switch CommitRule.actingMember(actor: trailers.actor, actorCount: trailers.actorCount, signer: signer, parentCount: commit.parents.count,
                                           parent: try parentTree.map(membership(at:)), kinds: try parentTree.map(kindsTable(at:)),
                                           changes: changes.map(\.path)) {
            case .failure(let violation): throw refuse(signer.label, by: violation)
            case .success(let member): judged = member
            }
            try checkInvitationUses(commit, changes: changes, signer: signer)
            guard let parentTree else { return signer }
            // The changes judged, and the kinds tables they are judged under: a commit's own changes
            // under its parent's kinds; a merge's differences from the policy merge under the merged
            // kinds AND every parent's (a path must be writable under each).
            var differences = changes
            var kindsTables = [try kindsTable(at: parentTree)]
            if let policy {
                try checkSideStamps(commit, mainLineTree: parentTree, signer: signer)
                try checkSideMergeOrder(commit, signer: signer)
                if policy == commit.tree { return signer }
                switch CommitRule.judgedInMerge(signer.member, parents: try parentTrees.map(membership(at:))) {
                case .failure(let violation): throw refuse(signer.label, by: violation)
                case .success(let member): judged = member
                }
                differences = try repository.treeChanges(from: policy, to: commit.tree)
                kindsTables = try ([policy] + parentTrees).map(kindsTable(at:))
                if let violation = CommitRule.mergeAuthorityProblem(differences.map(\.path)) { throw refuse(signer.label, by: violation) }
            }
            // Rule 2 for each change, under every kinds table that applies.
            for change in differences {
                var files: (before: [UInt8]?, after: [UInt8]?)?
                if CommitRule.readsBytes(of: change.path, judged: judged, kinds: kindsTables[0]) {
                    files = (try bytes(of: change.old), try bytes(of: change.new))
                }
                if let violation = CommitRule.changeProblem(change.path, by: judged, kinds: kindsTables, files: files) {
                    throw refuse(signer.label, by: violation)
                }
            }
            // Rule 6 for records (format 7): a record's stamps name the judged member, or were there before
            // (for a merge: in the policy merge).
            try checkRecordStamps(commit, changes: differences, isMerge: policy != nil, firstParentTree: parentTree,
                                  kinds: kindsTables[0], signer: signer, judged: judged)
            // Rule 5, once the role allowed the change: no key moves to another member; an Admin stays.
            try checkMemberFiles(commit, changes: differences, parentTrees: parentTrees, signer: signer, judged: judged)
            if differences.contains(where: { MembershipResolution.isAuthority($0.path) }),
               let violation = CommitRule.noAdminLeft(after: try membership(at: commit.tree), parent: try membership(at: parentTree)) {
                throw refuse(signer.label, by: violation)
            }
            return signer
        } catch let error as GitError {
            throw refuse(commit.author.name, nil, "it cannot be read (\(error.message))")
        }
    }

    /// What reached main counts before what is merged into it, also through a merge on the side
    /// (the third red-team pass, issue 42): a merge `merge` (signed as `signer`) is refused when its
    /// side holds a merge that took commits of this main line (its first parent) as its OWN side
    /// (`sideMergeOrderProblem`).
    private func checkSideMergeOrder(_ merge: Commit, signer: CommitSigner) throws {
        guard let problem = try sideMergeOrderProblem(mainLine: merge.parents[0], side: merge.parents[1]) else { return }
        throw ConcordError.unauthorizedCommit(commit: merge.id.short, signer: signer.label, change: nil,
                                              reason: "it brings in merge \(problem.merge.id.short), which \(problem.reason)")
    }

    /// The first merge a merge of `side` into `mainLine` would bring in that took commits of the main
    /// line as its own side — another line first, as `concord merge main` on an old copy or `git pull`
    /// makes it — where that order keeps something the main line first would not (their policy
    /// merges differ), with why; nil when there is none. Such a merge judged the main line's commits
    /// as the side (a decision on the old copy taking away what had reached main, a demoted member's
    /// writes there standing), and a merge bringing it in would take its tree. Where the order
    /// changes nothing, as for most `git pull` merges, it is no problem.
    package func sideMergeOrderProblem(mainLine: ObjectID, side: ObjectID) throws -> (merge: Commit, reason: String)? {
        for commit in try repository.newCommits(from: side, excluding: [mainLine]) where commit.parents.count == 2 {
            let (first, second) = (commit.parents[0], commit.parents[1])
            // Its side reaches the main line: a merge base of its second parent and the main line its first parent lacks.
            let reaches = try repository.mergeBases(second, mainLine).contains { base in
                try base != first && !repository.isAncestor(base, of: first)
            }
            guard reaches else { continue }
            let (mainFirst, itsOrder) = (try PolicyMerge.tree(in: repository, ours: first, theirs: second, caches: caches),
                                         try PolicyMerge.tree(in: repository, ours: second, theirs: first, caches: caches))
            guard try !sameButWhoAdded(mainFirst, itsOrder) else { continue }
            return (commit, "took the main line's commits (\(second.short)) as the side of another line (\(first.short)), and in that order "
                + "keeps what merging the main line first would not; what reached main counts before what is merged into it")
        }
        return nil
    }

    /// Whether trees `a` and `b` hold the same files, a member file's `addedBy` and `addedAt` aside:
    /// two Admins adding one member each name themselves, and either record is true. No rule reads them.
    private func sameButWhoAdded(_ a: ObjectID, _ b: ObjectID) throws -> Bool {
        try repository.treeChanges(from: a, to: b).allSatisfy { change in
            let path = String(decoding: change.path, as: UTF8.self)
            guard CommitRule.isMemberPath(change.path), let old = try bytes(of: change.old), let new = try bytes(of: change.new),
                  var was = try? JSONValue.parse(old).objectValue, var now = try? JSONValue.parse(new).objectValue,
                  (try? Member.decode(new, path: path)) != nil else { return false }
            for field in ["addedBy", "addedAt"] { (was[field], now[field]) = (nil, nil) }
            return was == now
        }
    }

    /// `commit` as the acceptance of an invitation (`Acceptance.judge`), read from its parent.
    private func acceptance(_ commit: Commit, changes: [TreeChange], key: SSHPublicKey, parentTree: ObjectID?) throws -> Acceptance.Outcome {
        guard let parentTree, commit.parents.count == 1, changes.count == 1 else { return .none }
        let path = String(decoding: changes[0].path, as: UTF8.self)
        let after = try bytes(of: changes[0].new).flatMap { try? Member.decode($0, path: path) }
        let invitation = try after?.invitation.flatMap { try openInvitation($0, at: parentTree) }
        return try Acceptance.judge(changes: changes.map(\.path), parentCount: commit.parents.count, after: after, added: changes[0].old == nil,
                                    key: key, parent: try membership(at: parentTree), kinds: try kindsTable(at: parentTree),
                                    invitation: invitation, root: { try root(of: commit).hex })
    }

    /// Rule 5 for the member files `changes` writes: no key moves to another member
    /// (`CommitRule.keyGivenAway`), and a key enters a member file only with its holder's proof
    /// (`CommitRule.unprovenKey`), from format 5 on (the parent's `profile.json`; for a merge, either
    /// parent's). A written file's old version is `change.old`: the parent's, or the policy merge's.
    private func checkMemberFiles(_ commit: Commit, changes: [TreeChange], parentTrees: [ObjectID], signer: CommitSigner,
                                  judged: Member) throws {
        let written = changes.filter { $0.new != nil && CommitRule.isMemberPath($0.path) }
        guard !written.isEmpty else { return }
        func refuse(_ violation: Violation) -> ConcordError {
            .unauthorizedCommit(commit: commit.id.short, signer: signer.label, change: violation.change, reason: violation.reason)
        }
        if let violation = CommitRule.keyGivenAway(written: written.map(\.path), after: try membership(at: commit.tree),
                                                   parents: try parentTrees.map(membership(at:))) {
            throw refuse(violation)
        }
        let added = written.filter { $0.old == nil }.compactMap { change -> String? in
            guard case .success(.member(let name)) = ProfilePathRules.classify(change.path, kinds: .empty) else { return nil }
            return name
        }
        for parent in parentTrees where !added.isEmpty {
            if let violation = CommitRule.nameTakenInAnotherCase(added: added, parent: try membership(at: parent)) { throw refuse(violation) }
        }
        guard CommitRule.provesKeys(parentFormats: try parentTrees.map { try profileInfo(at: $0)?.formatVersion ?? 0 }),
              let profileID = try profileInfo(at: commit.tree)?.id else { return }
        var files = [(path: String, before: Member?, after: Member)]()
        for change in written {
            let path = String(decoding: change.path, as: UTF8.self)
            guard case .success(.member(let name)) = ProfilePathRules.classify(change.path, kinds: .empty),
                  let written = try bytes(of: change.new), let after = try? Member.decode(written, path: path), after.name == name else { continue }
            files.append((path, try bytes(of: change.old).flatMap { try? Member.decode($0, path: path) }, after))
        }
        if let violation = CommitRule.unprovenKey(files, judged: judged, profileID: profileID) { throw refuse(violation) }
    }

    /// Open invitations are bounded on every commit, merges included (`CommitRule.invitationUseProblem`),
    /// checked when it changes member files.
    private func checkInvitationUses(_ commit: Commit, changes: [TreeChange], signer: CommitSigner) throws {
        guard changes.contains(where: { CommitRule.isMemberPath($0.path) }) else { return }
        let joined = CommitRule.invitationsJoined(try membership(at: commit.tree))
        var invitations = [String: OpenInvitation]()
        for (id, _) in joined { invitations[id] = try openInvitation(id, at: commit.tree) }
        if let violation = CommitRule.invitationUseProblem(joined: joined, invitations: invitations) {
            throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer.label, change: violation.change, reason: violation.reason)
        }
    }
}
