import ConcordGit
import ConcordModel
import ConcordTrust

/// What a member did on a merge's side after losing their rights on the main line counts only as
/// far as their new role allows (docs/security.md, "What a member who lost their rights did
/// concurrently").
///
/// Only the side (the second parent's commits) can lose anything: the main line's commits reached
/// the remote before any decision the side brings, which takes effect where it joins, after them.
/// Each side commit is judged where it lands, as each decision is (`MainlineReplay`): on the main
/// line's membership with the side's decisions before it replayed. Each file it changed that its
/// signer there (the active holder of its key; none when the main line removed the key or revoked
/// its holder), or the member it acts for, may not change there is left out of the merge: a record
/// keeps what the side's standing commits made of it before the first change left out, merged with
/// the main line's version by the kind's policy (the main line's alone when there is none), and a
/// log keeps every entry but those the commits left out added.
/// What is left out stays in history and is reported (`PolicyMerge.leftOut`, the merge commit's
/// `Concord-Left-Out` trailers).
///
/// So a member revoked on the main line gains nothing by writing on an old copy weeks later, nor by
/// demoting themselves, leaving or removing the key there afterwards; an Admin who revokes someone
/// on an old copy takes nothing away that had already reached main; and a member's own later
/// decision on the side takes nothing from what they wrote before it. Later edits by others of a
/// record left out, made on top of the member's on the side, are left out with it (they were made
/// on what it took away) and reported the same way.
struct RightsTakenAway {
    /// A file a merge took from the other side because a member who lost their rights changed it.
    struct LeftOut: Sendable, Equatable {
        let path: String
        /// The member whose change it was.
        let member: String
        /// Their newest commit that changed it.
        let commit: ObjectID
        /// What took the right away.
        let cause: LeftOutCause

        /// How the merge commit's `Concord-Left-Out` trailer says it.
        var trailerValue: String { "\(path) by=\(member) commit=\(commit.short)" }
    }

    /// Applies the rule to `index`, the merge of `ours` (the main line) and `theirs` (the side) so far
    /// (membership resolved), under the merged `kinds`; returns what it left out.
    ///
    /// Each side commit is judged where it lands (`MembershipResolution.landings`): its signer (and
    /// the member it acts for) with the rights they hold in the main line's membership with the
    /// side's decisions before it replayed, under the kinds there: the main line's, with the side's
    /// kinds changes before it that stand merged in. Two passes: first a change to the kinds, which
    /// only an Admin makes (a fallen Admin's is left out, and the file is the main line's); then every
    /// other change, under the kinds where it lands — the main line's alone when a kinds change fell.
    static func apply(to index: MergeIndex, in repository: Repository, ours: ObjectID, theirs: ObjectID, caches: EngineCaches,
                      kinds: KindsTable, replayed: MembershipResolution.MainlineOutcome? = nil) throws -> [LeftOut] {
        let trees = (ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        let side = Side(tip: theirs, tree: trees.theirs, mainLine: ours)

        // The common case: every side commit was made under the members and the kinds the merge has. Nothing to judge.
        var merged = try index.writeTree()
        let mergedDocuments = try documents(merged, repository)
        guard try membershipTrees(of: side, repository).contains(where: { try documents($0, repository) != mergedDocuments }) else { return [] }
        let landings = try sideChanges(try MembershipResolution.landings(of: theirs, joining: ours, replayed: replayed, in: repository, caches: caches),
                                       repository, caches)
        let mainLineKinds = try kindsTable(in: trees.ours, repository) ?? kinds

        // Pass 1. The kinds: a change by someone who may not make it where it lands is left out (only Admins may).
        let fallen = try find(landings, kinds: Array(repeating: mainLineKinds, count: landings.count), only: KindsTable.path, repository, caches)
        let base = try repository.mergeBase(ours, theirs).map { try repository.commit($0).tree }
        let sides = Sides(landings: landings, base: base, mainLine: trees.ours)
        var report = try leaveOut(fallen, from: index, merged: merged, sides, kinds: kinds, repository)
        if !fallen.isEmpty, let attributes = try repository.entry(at: ProfilePaths.gitattributes, inTree: trees.ours), attributes.kind == .blob {
            // .gitattributes is what kinds.json generates: it follows the kinds the main line keeps.
            try index.set(try treePath(ProfilePaths.gitattributes), to: attributes.id)
        }
        merged = try index.writeTree()
        let ending = try kindsTable(in: merged, repository) ?? kinds

        // Pass 2. Everything else, under the kinds where each commit lands.
        let landingKinds = fallen.isEmpty ? try kindsWhereEachLands(landings, from: mainLineKinds, repository)
            : Array(repeating: ending, count: landings.count)
        let found = try find(landings, kinds: landingKinds, only: nil, repository, caches)
        // A file the first pass left out already is reported once.
        report += try leaveOut(found, from: index, merged: merged, sides, kinds: ending, repository)
            .filter { late in !report.contains { $0.path == late.path && $0.member == late.member } }
        return report
    }

    /// The kinds each side commit (`landings`, in side order) lands under: the main line's
    /// (`mainLine`) with the side's kinds changes before it merged in, each as the three-way kinds
    /// merge of what it changed onto what the replay holds. A change that cannot be merged there
    /// counts for nothing: the main line's kinds hold, and the commit's own check held it to the
    /// kinds it was made under.
    private static func kindsWhereEachLands(_ landings: [Landed], from mainLine: KindsTable,
                                            _ repository: Repository) throws -> [KindsTable] {
        var current = mainLine
        var bytes = mainLine.canonicalBytes()
        var tables = [KindsTable]()
        for landed in landings {
            tables.append(current)
            guard landed.paths.contains(KindsTable.path), let after = try blob(KindsTable.path, in: landed.links.tree, repository) else { continue }
            let before = try blob(KindsTable.path, in: landed.before, repository)
            guard case .merged(let next, _) = RecordMerge.mergeKindsFile(base: before, ours: bytes, theirs: after),
                  let table = try? KindsTable.decode(next) else { continue }
            (current, bytes) = (table, next)
        }
        return tables
    }

    /// What decides the rights in a tree: its members directory and its kinds.
    private static func documents(_ tree: ObjectID, _ repository: Repository) throws -> [ObjectID?] {
        try [ProfilePaths.membersDirectory, KindsTable.path].map { try repository.entry(at: $0, inTree: tree)?.id }
    }

    private static func kindsTable(in tree: ObjectID, _ repository: Repository) throws -> KindsTable? {
        try blob(KindsTable.path, in: tree, repository).flatMap { try? KindsTable.decode($0) }
    }

    /// The merge's side: its tip and tree, and the main line's tip.
    private struct Side {
        let tip: ObjectID
        let tree: ObjectID
        let mainLine: ObjectID
    }

    /// The trees the side's commits were made under (each one's parents'), and the side's tip: when
    /// all hold the merged members and kinds, no side commit lands on other rights than it was made under.
    private static func membershipTrees(of side: Side, _ repository: Repository) throws -> [ObjectID] {
        var trees = [side.tree], seen = Set([side.tree])
        for commit in try repository.newCommits(from: side.tip, excluding: [side.mainLine]) {
            for parent in commit.parents {
                let tree = try repository.commit(parent).tree
                if seen.insert(tree).inserted { trees.append(tree) }
            }
        }
        return trees
    }

    /// A side commit where it lands (`on`), with the tree its change is against (its parent's, or for
    /// a merge the policy merge of its parents) and the paths it changed.
    private struct Landed {
        let links: CommitLinks
        let on: Membership
        let before: ObjectID
        let paths: [String]
    }

    /// The side's commits in side order with what each changed (merges of more than two parents, refused by the check, aside).
    private static func sideChanges(_ landings: [(commit: CommitLinks, on: Membership)], _ repository: Repository,
                                    _ caches: EngineCaches) throws -> [Landed] {
        try landings.filter { (1...2).contains($0.commit.parents.count) }.map { links, on in
            let before = links.parents.count == 1 ? try repository.commit(links.parents[0]).tree
                : try PolicyMerge.tree(in: repository, ours: links.parents[0], theirs: links.parents[1], caches: caches)
            let paths = try repository.treeChanges(from: before, to: links.tree).map { String(decoding: $0.path, as: UTF8.self) }
            return Landed(links: links, on: on, before: before, paths: paths)
        }
    }

    /// The changes to leave out of the side (`landings`, its commits in side order with the
    /// membership each lands on): what each commit changed that who answers for it there
    /// (`RightsTakenAwayRule.answering`) may not change under the kinds where it lands (`kinds`, one
    /// table for each of `landings`); `only`: that path alone.
    private static func find(_ landings: [Landed], kinds: [KindsTable], only: String?,
                             _ repository: Repository, _ caches: EngineCaches) throws -> Found {
        var found = Found()
        for (landed, table) in zip(landings, kinds) {
            let (links, landing, before) = (landed.links, landed.on, landed.before)
            // .gitattributes follows kinds.json (what it generates), never judged on its own.
            let paths = landed.paths.filter { only == nil ? $0 != KindsTable.path && $0 != ProfilePaths.gitattributes : $0 == only }
            guard !paths.isEmpty, let key = try MembershipResolution.signer(ofCommit: links.id, in: repository, caches: caches) else { continue }
            let parentTree = try repository.commit(links.parents[0]).tree
            let commit = try repository.commit(links.id)
            let madeUnder = try CommitAuthorizer.membership(in: repository, tree: parentTree, caches: caches)
            var leftOut = [(path: String, member: String, cause: LeftOutCause)]()
            switch RightsTakenAwayRule.answering(signer: key, actor: CommitTrailers(message: commit.message).actor,
                                                 landing: landing, madeUnder: madeUnder) {
            case .keyGone(let member, let removed):
                for path in paths where !RightsTakenAwayRule.isAuthority(path) {
                    leftOut.append((path, member, removed ? .keyRemoved(fingerprint: key.fingerprint) : .rightsLowered))
                }
            case .members(let members):
                for (path, name) in RightsTakenAwayRule.leftOut(paths, by: members, kinds: table) {
                    // Lost to the membership where it lands, or (with the rights it was made with) to the kinds.
                    let had = madeUnder.members[name].map { $0.status == .active && !RightsTakenAwayRule.mayNotChange(path, $0, kinds: table) }
                    leftOut.append((path, name, had == false ? .kindsChanged : .rightsLowered))
                }
            }
            for (path, member, cause) in leftOut {
                // Their newest commit that changed it (commits come in side order), and every commit left out there.
                found.changes[path, default: []].removeAll { $0.member == member }
                found.changes[path, default: []].append((member, links.id, cause))
                if !found.commits[path, default: []].contains(where: { $0.commit == links.id }) {
                    found.commits[path, default: []].append((links.id, before))
                }
            }
        }
        return found
    }

    /// What to leave out, by path: who changed it (member, their newest commit there, and why), and
    /// every commit left out that changed it, with the tree it changed (a log drops what they added).
    private struct Found {
        var changes = [String: [(member: String, commit: ObjectID, cause: LeftOutCause)]]()
        var commits = [String: [(commit: ObjectID, before: ObjectID)]]()
        var isEmpty: Bool { changes.isEmpty }
    }

    /// What a left-out file is judged against: the side's commits where they land, the merge base's
    /// tree (nil: none), the main line's tree.
    private struct Sides {
        let landings: [Landed]
        let base: ObjectID?
        let mainLine: ObjectID
    }

    /// Leaves `found` out of `index` (whose tree is `merged`). A log drops the entries the left-out
    /// commits added that neither the main line nor a side commit that stands has; a record keeps what
    /// the side's standing changes made of it before its first left-out change, merged with the main
    /// line's version by its kind's policy; any other file takes the main line's version. Returns what
    /// was left out.
    private static func leaveOut(_ found: Found, from index: MergeIndex, merged: ObjectID, _ sides: Sides,
                                 kinds: KindsTable, _ repository: Repository) throws -> [LeftOut] {
        guard !found.isEmpty else { return [] }
        var report = [LeftOut]()
        for (path, changes) in found.changes.sorted(by: { $0.key < $1.key }) {
            let leftOutCommits = found.commits[path] ?? []
            if case .success(.logDay) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) {
                // A log keeps everything but what only the left-out commits added.
                let kept = try LogEntry.parseLogFile(try blob(path, in: sides.mainLine, repository) ?? [])
                func added(_ tree: ObjectID, over before: ObjectID) throws -> [LogEntry.Identity] {
                    let was = Set(try LogEntry.parseLogFile(try blob(path, in: before, repository) ?? []).map(\.identity))
                    return try LogEntry.parseLogFile(try blob(path, in: tree, repository) ?? []).map(\.identity).filter { !was.contains($0) }
                }
                var dropping = Set<LogEntry.Identity>()
                for (commit, before) in leftOutCommits { dropping.formUnion(try added(try repository.commit(commit).tree, over: before)) }
                let leftOutIDs = Set(leftOutCommits.map(\.commit))
                for landed in sides.landings where landed.paths.contains(path) && !leftOutIDs.contains(landed.links.id) {
                    dropping.subtract(try added(landed.links.tree, over: landed.before))
                }
                let entries = RightsTakenAwayRule.logEntries(try LogEntry.parseLogFile(try blob(path, in: merged, repository) ?? []),
                                                             keeping: kept, dropping: dropping)
                // (A day file only they wrote stays, empty: files are never removed.)
                try index.set(try treePath(path), to: try repository.writeBlob(LogEntry.encodeLogFile(entries)))
            } else if let standing = try standingVersion(path, before: leftOutCommits.first?.before, sides, kinds: kinds, repository) {
                try index.set(try treePath(path), to: try repository.writeBlob(standing))
            } else if let entry = try repository.entry(at: path, inTree: sides.mainLine), entry.kind == .blob {
                // Any other file: the main line's version.
                try index.set(try treePath(path), to: entry.id)
            } else if case .success(.record) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds),
                      let bytes = try blob(path, in: merged, repository), let record = try? Record.decode(bytes) {
                // A record the main line lacks stays (files are never removed) as a tombstone of the version
                // left out (`RightsTakenAwayRule.tombstone`), unless its kind is not one the merge ends with:
                // then it is no file of the profile, and goes.
                try index.set(try treePath(path), to: try repository.writeBlob(RightsTakenAwayRule.tombstone(of: record).encoded()))
            } else {
                try index.remove(try treePath(path))
            }
            for change in changes.sorted(by: { $0.member < $1.member }) {
                report.append(LeftOut(path: path, member: change.member, commit: change.commit, cause: change.cause))
            }
        }
        return report
    }

    /// What the side's standing changes made of record `path` before its first left-out change (the
    /// tree that change was made against: `before`), merged with the main line's version by the kind's
    /// policy (three ways, against the merge base's); nil when the side had not changed it there, or
    /// the policy cannot merge them (then the main line's version holds).
    private static func standingVersion(_ path: String, before: ObjectID?, _ sides: Sides, kinds: KindsTable,
                                        _ repository: Repository) throws -> [UInt8]? {
        guard let before, let theirs = try blob(path, in: before, repository),
              case .success(.record(let kind, _)) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) else { return nil }
        let base = try sides.base.flatMap { try blob(path, in: $0, repository) }
        guard theirs != base else { return nil }
        guard let ours = try blob(path, in: sides.mainLine, repository) else { return theirs }
        guard case .merged(let bytes, _) = RecordMerge.merge(policy: kind.policy, base: base, ours: ours, theirs: theirs) else { return nil }
        return bytes
    }

    private static func blob(_ path: String, in tree: ObjectID, _ repository: Repository) throws -> [UInt8]? {
        guard let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob else { return nil }
        return try repository.blob(entry.id)
    }
}
