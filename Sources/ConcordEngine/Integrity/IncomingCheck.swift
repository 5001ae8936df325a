import ConcordGit
import ConcordModel
import ConcordRules

/// The structural rule every commit fetched or cloned from a remote must pass before anything is
/// merged or checked out. A remote is hostile until proven otherwise: whoever can push (any
/// member, a stolen device, the server, anyone who can write a shared folder) must not be able to
/// write outside the profile, into `.git`, or files the format does not have.
///
/// Each new commit (reachable from the fetched tip and not from what this device already has) is
/// compared with its first parent, which is either known here or was checked just before it
/// (`newCommits` lists parents first), so every path of every new tree is checked once:
/// - only regular files (mode 100644) and directories;
/// - every name safe by git's path rules, every path one the format allows, a record in its
///   id's bucket (`ProfilePathRules`);
/// - every record readable, at most 1 MiB (its size is read before the record), its `id` and
///   `kind` those of its path; log files readable with each entry on its file's day;
/// - profile.json, kinds.json and member files readable, the profile id unchanged,
///   `.gitattributes` the one the commit's kinds generate;
/// - no record, log, member or profile file removed, against any parent (deletions are tombstones);
/// - no second root: a history that does not descend from this profile's first commit is refused.
///
/// Before its content is read, each commit must also pass the access rule (`CommitAuthorizer`,
/// `AccessRule`): signed by an active member of its parent's membership, changing only what that
/// member's role may write under the parent's kinds.
package struct IncomingCheck {
    let repository: Repository
    /// The caches of the engine checking (signatures, memberships, policy merges).
    let caches: EngineCaches
    /// The profile's id; nil while cloning (the first commit's profile.json sets it).
    let profileID: String?
    /// Signatures are verified in chunks of `size` commits, up to `ahead` chunks beyond the one
    /// being checked (bounds the signed bytes held in memory; `SignaturePipeline`).
    var signatureChunks = (size: 128, ahead: 8)
    /// Where the files each checked commit changed are kept (for the audit index), if anywhere.
    var changedPaths: ChangedPaths?
    /// Signatures verified while the commits were fetched (a path fetch), waited for first.
    var prefetchedSignatures: SignaturePrefetch?
    /// What the fetch read and hashed (a path fetch): the check reads those trees, blobs and
    /// changes from here instead of the repository.
    var fetched = FetchedObjects.none

    /// Checks every commit reachable from `tip` and from none of `known` (commits reachable from
    /// `known` were checked when they arrived, or written here); throws
    /// `ConcordError.unauthorizedCommit` or `.invalidCommit` for the first one that fails.
    /// Returns how many commits were checked.
    @discardableResult
    package func verify(tip: ObjectID, known: [ObjectID]) throws -> Int {
        try repository.reading(fetched) { try verifyReading(tip: tip, known: known) }
    }

    private func verifyReading(tip: ObjectID, known: [ObjectID]) throws -> Int {
        let commits: [Commit]
        do { commits = try repository.newCommits(from: tip, excluding: known) } catch let error as GitError {
            throw ConcordError.invalidCommit(commit: tip.short, path: nil, reason: "its history cannot be read (\(error.message))")
        }
        var expectedID = profileID
        var sawRoot = !known.isEmpty
        let authorizer = CommitAuthorizer(repository: repository, caches: caches)
        // A commit's parent is most often one of the new commits: its tree is known.
        for commit in commits { authorizer.commitTrees[commit.id] = commit.tree }
        var kindsTables = [ObjectID: KindsTable]()
        var recentTrees = RecentTrees()
        // Signatures are verified ahead, on every core, while the commits before them are checked.
        if let prefetchedSignatures {
            prefetchedSignatures.finish()
            PerformanceTrace.step("signatures verified while fetching, waited for")
        }
        let memo = prefetchedSignatures.flatMap { $0.memo.count > 0 ? $0.memo : nil }   // nothing to ask otherwise
        let signatures = SignaturePipeline(authorizer: authorizer, commits: commits, chunkSize: signatureChunks.size,
                                           ahead: signatureChunks.ahead, memo: memo)
        defer { signatures.finish() }   // no verification outlives a refusal
        for (position, commit) in commits.enumerated() {
            if commit.parents.isEmpty {
                guard !sawRoot else {
                    throw ConcordError.invalidCommit(commit: commit.id.short, path: nil,
                                                     reason: "it starts a history of its own: the remote's main does not descend from this profile's first commit")
                }
                sawRoot = true
            }
            let changes: [TreeChange]
            do {
                // The walk checks every new tree's order first (a lookup in a tree out of order can miss).
                let parentTree = try commit.parents.first.map { try authorizer.commitTrees[$0] ?? repository.commit($0).tree }
                changes = try repository.treeChanges(from: parentTree, to: commit.tree, recent: &recentTrees)
            } catch let error as GitError {
                throw ConcordError.invalidCommit(commit: commit.id.short, path: nil, reason: error.message)
            }
            try authorizer.authorize(commit, changes: changes, signature: try signatures.check(at: position))
            try check(commit, changes: changes, profileID: &expectedID, kindsTables: &kindsTables)
            changedPaths?.byCommit[commit.id] = changes.map(\.path)
        }
        return commits.count
    }

    private func check(_ commit: Commit, changes: [TreeChange], profileID: inout String?,
                       kindsTables: inout [ObjectID: KindsTable]) throws {
        func refuse(_ path: String?, _ reason: String) -> ConcordError {
            ConcordError.invalidCommit(commit: commit.id.short, path: path, reason: reason)
        }
        do {
            let documents = try repository.entries(at: [KindsTable.path, ProfilePaths.profile], inTree: commit.tree)
            guard let kindsEntry = documents[0], kindsEntry.kind == .blob else { throw refuse(KindsTable.path, "missing") }
            guard documents[1]?.kind == .blob else { throw refuse(ProfilePaths.profile, "missing") }
            let kinds: KindsTable
            if let known = kindsTables[kindsEntry.id] {
                kinds = known
            } else {
                do { kinds = try KindsTable.decode(try read(kindsEntry.id, limit: ProfilePathRules.maxDocumentBytes, path: KindsTable.path, refuse)) } catch let error as ModelError {
                    throw refuse(KindsTable.path, error.localizedDescription)
                }
                kindsTables[kindsEntry.id] = kinds
            }
            // kinds.json and .gitattributes change together: the attributes are generated from the kinds.
            if changes.contains(where: { $0.path.elementsEqual(KindsTable.path.utf8) }),
               !changes.contains(where: { $0.path.elementsEqual(ProfilePaths.gitattributes.utf8) }),
               let attributes = try repository.entry(at: ProfilePaths.gitattributes, inTree: commit.tree),
               try read(attributes.id, limit: ProfilePathRules.maxDocumentBytes, path: ProfilePaths.gitattributes, refuse)
                != Array(kinds.gitattributes().utf8) {
                throw refuse(ProfilePaths.gitattributes, "it differs from what .concord/kinds.json generates (it would change how plain git merges)")
            }
            // Every path's place in the format, found on every core (a clone has one per record);
            // then each change in order, so the first refusal is the one a walk in order meets.
            let places = Parallel.map(changes, minimumPerShare: 512) { change in
                (safe: GitPath.isSafe(change.path), file: ProfilePathRules.classify(change.path, kinds: kinds))
            }
            func text(_ path: [UInt8]) -> String { String(decoding: path, as: UTF8.self) }
            var pending = [(path: [UInt8], file: ProfilePathRules.File, bytes: [UInt8])]()
            for (change, place) in zip(changes, places) {
                guard place.safe else { throw refuse(text(change.path), ProfilePathRules.Refusal.unsafeName.description) }
                guard let new = change.new else {
                    if case .success(let removed) = place.file, removed.mustStay {
                        throw refuse(text(change.path), "removed (deletions are tombstones, files are never removed)")
                    }
                    continue
                }
                guard case .file(let blob) = new else {
                    if case .other(let mode) = new {
                        throw refuse(text(change.path), "mode \(mode): only regular files (100644) and directories are allowed")
                    }
                    throw refuse(text(change.path), "not a regular file")
                }
                switch place.file {
                case .failure(let refusal): throw refuse(text(change.path), refusal.description)
                case .success(let file):
                    switch file {
                    case .record, .logDay:
                        pending.append((change.path, file, try read(blob, limit: file.limit, path: text(change.path), refuse)))
                    default:
                        var old: ObjectID?
                        if case .file(let blob)? = change.old { old = blob }
                        try checkContent(file, blob: blob, old: old, path: text(change.path), kinds: kinds, profileID: &profileID, refuse)
                    }
                }
            }
            // Records and log files are read above and checked on every core (a clone checks them all).
            // A log entry's origin came with format 6: in an older profile it is refused, as that format's concord would.
            var logOrigins = true
            if pending.contains(where: { if case .logDay = $0.file { true } else { false } }), let info = documents[1] {
                let bytes = try read(info.id, limit: ProfilePathRules.maxDocumentBytes, path: ProfilePaths.profile, refuse)
                logOrigins = ((try? ProfileInfo.decode(bytes))?.formatVersion ?? 0) >= LogImport.firstFormat
            }
            let problems = Parallel.map(pending, minimumPerShare: 512) { [logOrigins] in
                ProfilePathRules.contentProblem(of: $0.file, bytes: $0.bytes, logOrigins: logOrigins)
            }
            if let index = problems.firstIndex(where: { $0 != nil }) { throw refuse(text(pending[index].path), problems[index]!) }
            // A merge must keep every file of its other parents too.
            for parent in commit.parents.dropFirst() {
                let tree = try repository.commit(parent).tree
                for change in try repository.treeChanges(from: tree, to: commit.tree) where change.new == nil {
                    if case .success(let removed) = ProfilePathRules.classify(change.path, kinds: kinds), removed.mustStay {
                        throw refuse(String(decoding: change.path, as: UTF8.self), "removed by a merge (deletions are tombstones)")
                    }
                }
            }
        } catch let error as GitError {
            throw refuse(nil, error.message)
        }
    }

    /// `old`: the file's blob in the commit's first parent, if it had one.
    private func checkContent(_ file: ProfilePathRules.File, blob: ObjectID, old: ObjectID?, path: String, kinds: KindsTable,
                              profileID: inout String?, _ refuse: (String?, String) -> ConcordError) throws {
        let bytes = try read(blob, limit: file.limit, path: path, refuse)
        // The first parent's version matters to profile.json alone (its format only moves up).
        let before: [UInt8]? = if file == .profileInfo, let old { try? read(old, limit: file.limit, path: path, refuse) } else { nil }
        if let problem = DocumentRule.problem(file, bytes: bytes, path: path, kinds: kinds, before: before, profileID: &profileID) {
            throw refuse(path, problem)
        }
    }

    /// The bytes of blob `id`, refusing it unread when it is larger than `limit`.
    private func read(_ id: ObjectID, limit: Int, path: @autoclosure () -> String,
                      _ refuse: (String?, String) -> ConcordError) throws -> [UInt8] {
        // What the fetch kept (a clone: every record) is looked up once, not for its header and again for its bytes.
        let fetched = self.fetched.blobs[id]
        let header = try fetched.map { (size: $0.count, type: ObjectType?.some(.blob)) } ?? repository.objectHeader(id)
        guard header.type == .blob else { throw refuse(path(), "not a file") }
        guard header.size <= limit else { throw refuse(path(), "\(header.size) bytes, over the \(limit)-byte limit") }
        return try fetched ?? repository.blob(id)
    }
}

extension IncomingCheck {
    /// The check of the commits of profile `profileID` (nil while cloning) in `repository`; a
    /// concord server's pre-receive builds one (ConcordServer's `PushCheck`).
    package init(repository: Repository, profileID: String?, caches: EngineCaches) {
        self.repository = repository
        self.profileID = profileID
        self.caches = caches
    }
}
