import ConcordGit
import ConcordModel
import Foundation
import Synchronization

/// The deterministic policy merge of two commits: the tree a sync commits when it merges them,
/// and the tree every device recomputes to check a merge commit it receives (rule 3 of
/// docs/security.md). Each file both sides changed goes through its kind's policy
/// (`MergePlanner`, under the kinds merged from base, ours and theirs); a file no policy resolves
/// keeps ours (or theirs when we have none), and the other side is saved under
/// `.concord/conflicts/` (`MergePlanner.conflictCopyPath`). Histories with several merge bases
/// are merged by libgit2 through a virtual base, with the same policies.
struct PolicyMerge {
    let tree: ObjectID
    let planner: MergePlanner
    let unresolved: [UnresolvedFile]
    /// The member and invitation files the membership resolution decided (`MembershipResolution`).
    let resolution: MembershipResolution
    /// The files taken from the other side because a member who lost their rights in this merge
    /// changed them concurrently (`RightsTakenAway`).
    let leftOut: [RightsTakenAway.LeftOut]

    /// The tree of the policy merge of `ours` and `theirs` (what `compute` gives): the one this process
    /// last computed in `repository` for them, or computed now. A sync checks the merge it just made
    /// before pushing it (`refuseUnpublishable`), and a merge of the same parents always gives the same tree.
    /// `candidate`: the tree a merge commit holds; when it is the disjoint union of its parents'
    /// changes (`isDisjointUnion`), it is the policy merge, and is returned without merging.
    static func tree(in repository: Repository, ours: ObjectID, theirs: ObjectID, caches: EngineCaches, candidate: ObjectID? = nil) throws -> ObjectID {
        // (Only while its objects are still there: a quarantine that was refused took them away.)
        if let known = caches.policyMerges.tree(repository.gitDirectory, ours, theirs), repository.contains(known) { return known }
        if let candidate, try isDisjointUnion(candidate, in: repository, ours: ours, theirs: theirs) { return candidate }
        return try compute(in: repository, ours: ours, theirs: theirs, caches: caches).tree
    }

    /// Whether `candidate` is `ours` with `theirs`' changes since their merge base, and nothing else,
    /// where that is the policy merge: one merge base; nothing under `.concord/` nor `.gitattributes`
    /// changed on either side (no membership to resolve, no kinds, nobody's rights changed, so nothing
    /// is left out); no file changed on both sides (no file for a policy to decide). Most merges of
    /// record edits are such, and are checked with three tree comparisons instead of a merge.
    static func isDisjointUnion(_ candidate: ObjectID, in repository: Repository, ours: ObjectID, theirs: ObjectID) throws -> Bool {
        let bases = try repository.mergeBases(ours, theirs)
        guard bases.count == 1 else { return false }
        let trees = (base: try repository.commit(bases[0]).tree, ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        for path in [".concord", ProfilePaths.gitattributes] {
            let base = try repository.entry(at: path, inTree: trees.base)?.id
            guard try repository.entry(at: path, inTree: trees.ours)?.id == base, try repository.entry(at: path, inTree: trees.theirs)?.id == base
            else { return false }
        }
        let mine = Set(try repository.treeChanges(from: trees.base, to: trees.ours).map(\.path))
        let theirChanges = try repository.treeChanges(from: trees.base, to: trees.theirs)
        guard !theirChanges.contains(where: { mine.contains($0.path) }) else { return false }
        let added = try repository.treeChanges(from: trees.ours, to: candidate)
        guard added.count == theirChanges.count else { return false }
        let expected = Dictionary(theirChanges.map { ($0.path, $0.new) }, uniquingKeysWith: { first, _ in first })
        return added.allSatisfy { change in expected[change.path].map { $0 == change.new } ?? false }
    }

    /// Merges `theirs` into `ours` in `repository` (writing the merged blobs and trees to its object
    /// database; no ref, index or working tree changes).
    /// `queueing`: whether files are decided together after libgit2's pass (`MergePlanner.queueing`);
    /// nil: when there is one merge base (tests compare the two ways).
    static func compute(in repository: Repository, ours: ObjectID, theirs: ObjectID, caches: EngineCaches, queueing: Bool? = nil) throws -> PolicyMerge {
        func kindsFile(_ commit: ObjectID) throws -> [UInt8]? { try repository.blob(KindsTable.path, atCommit: commit) }
        // Every merge base, once (git_merge_base's answer is the first of them).
        let bases = try repository.mergeBases(ours, theirs)
        let base = bases.first
        let planner = MergePlanner(kinds: MergePlanner.mergedKinds(base: try base.flatMap(kindsFile), ours: try kindsFile(ours),
                                                                   theirs: try kindsFile(theirs)))
        // With one merge base, libgit2 only asks about this merge's files: they are decided
        // together afterwards, on every core, and the merged ones stored as one pack.
        planner.queueing = queueing ?? (bases.count == 1)
        let index = try repository.mergeCommits(ours: ours, theirs: theirs, resolver: planner.resolve)
        if planner.queueing {
            let decided = planner.decideQueued()
            var pack = ObjectPack()
            let merged = decided.compactMap { file -> (path: String, bytes: [UInt8])? in
                guard case .merged(let bytes) = file.resolution else { return nil }   // unresolved: left conflicted, below
                return (file.input.path, bytes)
            }
            let blobs = pack.addBlobs(merged.map(\.bytes))
            try pack.write(into: repository)
            for (file, blob) in zip(merged, blobs) { try index.resolve(try treePath(file.path), to: blob) }
        }
        var unresolved = [UnresolvedFile]()
        for conflict in try index.conflicts() {
            // Keep ours, the main line's (or theirs when we have none, or when only ours does not parse:
            // a broken file never wins over a readable one); save the other side so nothing is lost.
            let failure = planner.failures[conflict.path.string]
            let oursBroken = failure.map { $0.hasPrefix("ours is not") && !$0.contains("theirs is not") } ?? false
            let (kept, other, otherCommit) = oursBroken && conflict.theirs != nil
                ? (conflict.theirs, conflict.ours, ours) : (conflict.ours ?? conflict.theirs, conflict.ours == nil ? nil : conflict.theirs, theirs)
            try index.resolve(conflict.path, to: kept)
            guard conflict.ours != nil else { continue }
            var savedAs: String?
            if let otherBlob = other {
                let copy = MergePlanner.conflictCopyPath(for: conflict.path.string, theirs: otherCommit)
                try index.set(try treePath(copy), to: otherBlob)
                savedAs = copy
            }
            let reason = failure
                ?? (conflict.theirs == nil ? "the other side removed the file outside Concord; ours is kept"
                                           : "both sides changed it and no Concord policy covers it")
            unresolved.append(UnresolvedFile(path: conflict.path.string, savedAs: savedAs, reason: reason))
        }
        // Membership is resolved, not merged file by file: where both sides changed it since the first
        // merge base, member and invitation files are the replay of both histories' decisions.
        let resolution = try MembershipResolution.compute(in: repository, base: base, ours: ours, theirs: theirs, caches: caches)
        for (path, bytes) in resolution.overrides.sorted(by: { $0.key < $1.key }) {
            try index.set(try treePath(path), to: try repository.writeBlob(bytes))
        }
        // What members who lost rights in this merge did concurrently counts only as far as the rights left allow.
        let leftOut = try RightsTakenAway.apply(to: index, in: repository, ours: ours, theirs: theirs, caches: caches, kinds: planner.kinds,
                                                replayed: resolution.replayed)
        let tree = try index.writeTree()
        caches.policyMerges.remember(tree, repository.gitDirectory, ours, theirs)
        return PolicyMerge(tree: tree, planner: planner, unresolved: unresolved, resolution: resolution, leftOut: leftOut)
    }
}

/// The trees of the last policy merges an engine computed, by repository and parents.
final class PolicyMergeMemo: Sendable {
    private let state = Mutex<(trees: [String: ObjectID], order: [String])>(([:], []))
    private static let limit = 64

    private static func key(_ repository: String, _ ours: ObjectID, _ theirs: ObjectID) -> String { "\(repository)\n\(ours.hex) \(theirs.hex)" }

    func tree(_ repository: String, _ ours: ObjectID, _ theirs: ObjectID) -> ObjectID? {
        state.withLock { $0.trees[Self.key(repository, ours, theirs)] }
    }

    func remember(_ tree: ObjectID, _ repository: String, _ ours: ObjectID, _ theirs: ObjectID) {
        let key = Self.key(repository, ours, theirs)
        state.withLock { state in
            if state.trees.updateValue(tree, forKey: key) == nil { state.order.append(key) }
            if state.order.count > Self.limit { state.trees[state.order.removeFirst()] = nil }
        }
    }
}
