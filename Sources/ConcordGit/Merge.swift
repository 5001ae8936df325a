// This file touches the libgit2 C API.
internal import CLibgit2

/// A path the merge left conflicted, with the blob of each side that has one.
public struct MergeConflict: Sendable, Hashable {
    public let path: TreePath
    public let ancestor: ObjectID?
    public let ours: ObjectID?
    public let theirs: ObjectID?
}

/// The in-memory result of merging two commits: an index that may still hold conflicts.
/// Owns its libgit2 index; nothing touches the working tree or HEAD.
public final class MergeIndex {
    private let handle: OpaquePointer
    private let repository: Repository

    init(handle: OpaquePointer, repository: Repository) {
        self.handle = handle
        self.repository = repository
    }

    deinit {
        git_index_free(handle)
    }

    /// The paths still conflicted, sorted by path.
    public func conflicts() throws -> [MergeConflict] {
        guard git_index_has_conflicts(handle) == 1 else { return [] }
        var iterator: OpaquePointer?
        try check("git_index_conflict_iterator_new", git_index_conflict_iterator_new(&iterator, handle))
        defer { git_index_conflict_iterator_free(iterator) }
        var out = [MergeConflict]()
        var ancestor: UnsafePointer<git_index_entry>?
        var ours: UnsafePointer<git_index_entry>?
        var theirs: UnsafePointer<git_index_entry>?
        while true {
            let result = git_index_conflict_next(&ancestor, &ours, &theirs, iterator)
            if result == GIT_ITEROVER.rawValue { break }
            try check("git_index_conflict_next", result)
            guard let pathPointer = (ours ?? theirs ?? ancestor)?.pointee.path else { continue }
            out.append(MergeConflict(path: try Self.treePath(String(cString: pathPointer)), ancestor: ancestor.map { ObjectID($0.pointee.id) },
                                     ours: ours.map { ObjectID($0.pointee.id) }, theirs: theirs.map { ObjectID($0.pointee.id) }))
        }
        return out.sorted { $0.path < $1.path }
    }

    /// Resolves conflicted `path` to `blob` (nil: the file is absent from the result).
    public func resolve(_ path: TreePath, to blob: ObjectID?) throws {
        try check("git_index_conflict_remove", git_index_conflict_remove(handle, path.string))
        if let blob { try set(path, to: blob) }
    }

    /// Adds or replaces a non-conflicted file in the result.
    public func set(_ path: TreePath, to blob: ObjectID) throws {
        try path.string.withCString { pathPointer in
            var entry = git_index_entry()
            entry.mode = GIT_FILEMODE_BLOB.rawValue
            entry.id = blob.raw
            entry.path = pathPointer
            try check("git_index_add", git_index_add(handle, &entry))
        }
    }

    /// Takes non-conflicted `path` out of the result (nothing when it is not there).
    public func remove(_ path: TreePath) throws {
        let result = git_index_remove(handle, path.string, 0)
        guard result != GIT_ENOTFOUND.rawValue else { return }
        try check("git_index_remove", result)
    }

    /// Writes the merged tree; fails while conflicts remain.
    public func writeTree() throws -> ObjectID {
        var oid = git_oid()
        try check("git_index_write_tree_to", git_index_write_tree_to(&oid, handle, repository.handle))
        return ObjectID(oid)
    }
}

extension Repository {
    /// Merges commit `theirs` into `ours` in memory (no working tree, no MERGING state), with every
    /// modify/modify and add/add conflict offered to `resolver` through the "concord" merge driver.
    /// Rename detection is off: records are matched by path.
    public func mergeCommits(ours: ObjectID, theirs: ObjectID, resolver: @escaping MergeResolver) throws -> MergeIndex {
        try ConcordMergeDriver.ensureRegistered()
        // Looking up each conflicting file's `merge=` attribute makes libgit2 read the index.
        try prepareIndexForLibgit2()
        var options = git_merge_options()
        try check("git_merge_options_init", git_merge_options_init(&options, UInt32(GIT_MERGE_OPTIONS_VERSION)))
        options.flags = 0
        options.file_favor = GIT_MERGE_FILE_FAVOR_NORMAL
        let ourCommit = try lookupCommit(ours)
        defer { git_commit_free(ourCommit) }
        let theirCommit = try lookupCommit(theirs)
        defer { git_commit_free(theirCommit) }
        var index: OpaquePointer?
        let result = ConcordMergeDriver.withResolver(for: handle, resolver) {
            ConcordMergeDriver.name.withCString { driverName -> Int32 in
                options.default_driver = driverName
                return git_merge_commits(&index, handle, ourCommit, theirCommit, &options)
            }
        }
        try check("git_merge_commits", result)
        guard let index else { throw GitError(function: "git_merge_commits", code: .other(-1), message: "no index") }
        return MergeIndex(handle: index, repository: self)
    }

    /// Every best common ancestor of two commits (several in a criss-cross history; none when
    /// they share no history).
    public func mergeBases(_ a: ObjectID, _ b: ObjectID) throws -> [ObjectID] {
        var out = git_oidarray()
        var first = a.raw, second = b.raw
        let result = git_merge_bases(&out, handle, &first, &second)
        if result == GIT_ENOTFOUND.rawValue { return [] }
        try check("git_merge_bases", result)
        defer { git_oidarray_dispose(&out) }
        return (0..<out.count).map { ObjectID(out.ids[$0]) }
    }

    /// The best common ancestor of two commits, or nil when they share no history.
    public func mergeBase(_ a: ObjectID, _ b: ObjectID) throws -> ObjectID? {
        var out = git_oid()
        var first = a.raw
        var second = b.raw
        let result = git_merge_base(&out, handle, &first, &second)
        if result == GIT_ENOTFOUND.rawValue { return nil }
        try check("git_merge_base", result)
        return ObjectID(out)
    }

    /// Resolves a revision such as `main`, `refs/remotes/origin/main`, `HEAD~2` or a hex id to a commit.
    public func resolveRevision(_ revision: String) throws -> ObjectID {
        var object: OpaquePointer?
        try check("git_revparse_single", git_revparse_single(&object, handle, revision))
        defer { git_object_free(object) }
        var peeled: OpaquePointer?
        try check("git_object_peel", git_object_peel(&peeled, object, GIT_OBJECT_COMMIT))
        defer { git_object_free(peeled) }
        return ObjectID(git_object_id(peeled))
    }

    /// The files that differ between two trees: each path with its blob in `old` (`before`, nil if
    /// added) and in `new` (`blob`, nil if removed). Sorted by path. Walks both trees' raw bytes side
    /// by side and skips every subtree whose id is unchanged, so the cost follows the changed
    /// directories, not the whole profile. A path git's rules refuse is an error: it cannot be
    /// written, and an incoming commit with one was refused before it got here (`IncomingCheck`).
    public func changedFiles(from old: ObjectID?, to new: ObjectID) throws -> [(path: TreePath, before: ObjectID?, blob: ObjectID?)] {
        var out = [(path: TreePath, before: ObjectID?, blob: ObjectID?)]()
        var path = [UInt8]()
        try collectChanges(from: old, to: new, path: &path, into: &out)
        // Tree order is path order for trees in git's order; out of order only if one is not.
        if !out.indices.dropFirst().allSatisfy({ out[$0 - 1].path < out[$0].path }) { out.sort { $0.path < $1.path } }
        return out
    }

    /// Adds the files that differ under `old` and `new` to `out`; `path` is their directory's
    /// path with a trailing slash (or empty), one buffer for the whole walk.
    private func collectChanges(from old: ObjectID?, to new: ObjectID?, path: inout [UInt8],
                                into out: inout [(path: TreePath, before: ObjectID?, blob: ObjectID?)]) throws {
        if old == new { return }
        let before = try old.map(rawTree) ?? RawTree([], id: nil)
        let after = try new.map(rawTree) ?? RawTree([], id: nil)
        let directoryLength = path.count
        try RawTree.forEachDifference(from: before, to: after) { removed, added in
            defer { path.removeSubrange(directoryLength...) }
            path.append(contentsOf: added.map(after.name) ?? before.name(removed!))
            if removed?.isTree ?? added!.isTree {   // a pair is always two trees or two files
                path.append(0x2F)
                try collectChanges(from: removed.map(before.id), to: added.map(after.id), path: &path, into: &out)
            } else {
                out.append((try MergeIndex.treePath(bytes: path), removed.map(before.id), added.map(after.id)))
            }
        }
    }

    func lookupCommit(_ id: ObjectID) throws -> OpaquePointer? {
        var oid = id.raw
        var commit: OpaquePointer?
        try check("git_commit_lookup", git_commit_lookup(&commit, handle, &oid))
        return commit
    }
}

extension MergeIndex {
    /// `text` as a `TreePath`, or the `GitError` that says which path git's rules refuse.
    static func treePath(_ text: String) throws -> TreePath {
        try treePath(bytes: Array(text.utf8))
    }

    static func treePath(bytes: [UInt8]) throws -> TreePath {
        do { return try TreePath(bytes: bytes) } catch {
            throw GitError(function: "tree path", code: .other(-1), message: error.description)
        }
    }
}
