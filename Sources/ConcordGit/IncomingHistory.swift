// This file touches the libgit2 C API.
internal import CLibgit2

/// One entry of a tree as the structural check sees it: a regular file, a directory, or anything
/// else (an executable, a symlink, a submodule link, a malformed mode), named by its mode.
public enum TreeEntryValue: Sendable, Equatable {
    case file(ObjectID)
    case tree(ObjectID)
    case other(mode: String)
}

/// A path whose entry differs between two trees: `old` nil when added, `new` nil when removed.
/// Directories are walked into, so every path names a file (or an entry that is neither).
public struct TreeChange: Sendable {
    public let path: [UInt8]
    public let old: TreeEntryValue?
    public let new: TreeEntryValue?
}

/// The trees one `treeChanges` call read on its new side, for the next call along a history.
public struct RecentTrees {
    var trees = [ObjectID: RawTree]()

    public init() {}
}

/// Two trees compared by `treeChanges`: the key of `FetchedObjects.changes`.
package struct TreePair: Hashable, Sendable {
    package let old: ObjectID?
    package let new: ObjectID?

    package init(old: ObjectID?, new: ObjectID?) {
        self.old = old
        self.new = new
    }
}

extension Repository {
    /// Whether `ancestor` is on `tip`'s first-parent line (`tip` itself included). Reads the commits
    /// `tip` reaches and `ancestor` does not, once: the first-parent line leaves them at `ancestor`
    /// or at a commit `ancestor` reaches, which then is not it.
    public func isOnFirstParentLine(_ ancestor: ObjectID, of tip: ObjectID) throws -> Bool {
        guard ancestor != tip else { return true }
        guard try isAncestor(ancestor, of: tip) else { return false }
        let newer = Set(try newCommits(from: tip, excluding: [ancestor]).map(\.id))
        var current = tip
        while current != ancestor {
            guard newer.contains(current), let first = try commitLinks(current).parents.first else { return false }
            current = first
        }
        return true
    }

    /// The commits reachable from `tip` and from none of `known`, parents before children. Reads
    /// only commit objects, each of which must be present.
    public func newCommits(from tip: ObjectID, excluding known: [ObjectID]) throws -> [Commit] {
        var walker: OpaquePointer?
        try check("git_revwalk_new", git_revwalk_new(&walker, handle))
        defer { git_revwalk_free(walker) }
        try check("git_revwalk_sorting",
                  git_revwalk_sorting(walker, GIT_SORT_TOPOLOGICAL.rawValue | GIT_SORT_REVERSE.rawValue))
        var start = tip.raw
        try check("git_revwalk_push", git_revwalk_push(walker, &start))
        for id in known where contains(id) {
            var hidden = id.raw
            try check("git_revwalk_hide", git_revwalk_hide(walker, &hidden))
        }
        var out = [Commit]()
        var oid = git_oid()
        while true {
            let result = git_revwalk_next(&oid, walker)
            if result == GIT_ITEROVER.rawValue { return out }
            try check("git_revwalk_next", result)
            out.append(try commit(ObjectID(oid)))
        }
    }

    /// Every file path whose entry differs between trees `old` (nil: empty) and `new`, with the
    /// entries' exact modes. Each tree read on the new side must be in git's strict order (no
    /// duplicate names), or the walk could miss an entry: such a tree is refused.
    public func treeChanges(from old: ObjectID?, to new: ObjectID?) throws -> [TreeChange] {
        var recent = RecentTrees()
        return try treeChanges(from: old, to: new, recent: &recent)
    }

    /// The same, for a walk along a history: the trees are looked up in `recent` first, which
    /// then holds the trees this call read on its new side. A commit's first parent is most
    /// often the commit compared just before it, so its trees are read once, not twice (a
    /// 256-directory kind tree is not kept by libgit2's cache and was inflated again; bench row B7).
    /// When a fetch from a path remote already compared exactly these two trees while copying
    /// them (`FetchedObjects.changes`, in a step handed them), its answer is used and nothing is read.
    public func treeChanges(from old: ObjectID?, to new: ObjectID?, recent: inout RecentTrees) throws -> [TreeChange] {
        if let known = lent.changes[TreePair(old: old, new: new)] {
            recent = RecentTrees()
            return known
        }
        var out = [TreeChange]()
        var read = RecentTrees()
        let kept = recent
        try Self.collectTreeChanges(from: old, to: new, prefix: [], tree: { try kept.trees[$0] ?? self.rawTree($0) },
                                    read: &read, into: &out)
        recent = read
        return out
    }

    /// The walk behind `treeChanges`, over the trees `tree` gives: `read` gets every tree read on
    /// the new side, each of which must be in git's strict order. Iterative, with the work left
    /// on a stack of its own in the order the recursive walk took it (the changes come out in the
    /// same order): a remote's tree 10,000 directories deep overflowed the thread's stack
    /// (SIGSEGV). A tree nested deeper than `TreePath.maxDepth` directories is refused.
    static func collectTreeChanges(from old: ObjectID?, to new: ObjectID?, prefix: [UInt8], tree: (ObjectID) throws -> RawTree,
                                   read: inout RecentTrees, into out: inout [TreeChange]) throws {
        enum Step {
            case compare(old: ObjectID?, new: ObjectID?, prefix: [UInt8], depth: Int)
            case append(TreeChange)
        }
        var steps = [Step.compare(old: old, new: new, prefix: prefix, depth: 0)]
        while let step = steps.popLast() {
            guard case .compare(let old, let new, let prefix, let depth) = step else {
                if case .append(let change) = step { out.append(change) }
                continue
            }
            if old == new { continue }
            if let new, depth > TreePath.maxDepth {
                throw GitError(function: "tree check", code: .other(-1),
                               message: "tree \(new) at '\(TreePath.shortened(prefix))' is nested deeper than \(TreePath.maxDepth) directories")
            }
            let before = try old.map(tree) ?? RawTree([], id: nil)
            let after = try new.map(tree) ?? RawTree([], id: nil)
            if let new {
                guard after.isStrictlyOrdered else {
                    throw GitError(function: "tree check", code: .other(-1),
                                   message: "tree \(new) at '\(String(decoding: prefix, as: UTF8.self))' has entries out of order or twice")
                }
                read.trees[new] = after
            }
            var next = [Step]()
            RawTree.forEachDifference(from: before, to: after) { removed, added in
                let path = prefix + (added.map(after.name) ?? before.name(removed!))
                let oldValue = removed.map(before.value), newValue = added.map(after.value)
                var oldTree: ObjectID?, newTree: ObjectID?
                if case .tree(let id)? = oldValue { oldTree = id }
                if case .tree(let id)? = newValue { newTree = id }
                if oldTree != nil || newTree != nil {
                    next.append(.compare(old: oldTree, new: newTree, prefix: path + [0x2F], depth: depth + 1))
                }
                let oldFile = oldTree == nil ? oldValue : nil, newFile = newTree == nil ? newValue : nil
                if oldFile != nil || newFile != nil { next.append(.append(TreeChange(path: path, old: oldFile, new: newFile))) }
            }
            steps += next.reversed()
        }
    }

    /// The size and type of object `id` without reading its content (a record's size is checked
    /// before the record is read).
    public func objectHeader(_ id: ObjectID) throws -> (size: Int, type: ObjectType?) {
        if let bytes = lent.blobs[id] { return (bytes.count, .blob) }   // kept by the fetch once they matched their id
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, handle))
        defer { git_odb_free(odb) }
        var oid = id.raw
        var size = 0
        var type = GIT_OBJECT_INVALID
        try check("git_odb_read_header", git_odb_read_header(&size, &type, odb, &oid))
        switch type {
        case GIT_OBJECT_BLOB: return (size, .blob)
        case GIT_OBJECT_TREE: return (size, .tree)
        case GIT_OBJECT_COMMIT: return (size, .commit)
        default: return (size, nil)
        }
    }
}

extension RawTree {
    /// `entry` as the structural check sees it: only modes 100644 and 40000 are a file and a tree.
    func value(_ entry: Entry) -> TreeEntryValue {
        let mode = self.mode(entry)
        if mode.elementsEqual("100644".utf8) { return .file(id(entry)) }
        if mode.elementsEqual("40000".utf8) { return .tree(id(entry)) }
        return .other(mode: String(decoding: mode, as: UTF8.self))
    }
}

/// A commit's tree and parents, read from its header as libgit2 reads them: the first line names
/// the tree, the `parent` lines that follow it name the parents (a `parent` line further down, where
/// libgit2 does not look, is not one).
public struct CommitLinks: Sendable, Equatable {
    public let id: ObjectID
    public let tree: ObjectID
    public let parents: [ObjectID]

    init(_ bytes: [UInt8], id: ObjectID) throws {
        let malformed = GitError(function: "commit parse", code: .other(-1), message: "commit \(id) is malformed")
        var lines = bytes.split(separator: 0x0A, maxSplits: 64, omittingEmptySubsequences: false).makeIterator()
        guard let first = lines.next(), first.starts(with: "tree ".utf8), first.count == 45,
              let tree = ObjectID(hex: String(decoding: first.dropFirst(5), as: UTF8.self)) else { throw malformed }
        var parents = [ObjectID]()
        while let line = lines.next(), line.starts(with: "parent ".utf8) {
            guard line.count == 47, let parent = ObjectID(hex: String(decoding: line.dropFirst(7), as: UTF8.self)) else { throw malformed }
            parents.append(parent)
        }
        self.id = id
        self.tree = tree
        self.parents = parents
    }
}

extension Repository {
    /// Commit `id`'s tree and parents, from its raw bytes (no message or signature parsed).
    public func commitLinks(_ id: ObjectID) throws -> CommitLinks {
        try CommitLinks(rawObject(id, type: GIT_OBJECT_COMMIT), id: id)
    }

    /// Every commit reachable from `tips`, each after its parents, each read by `links` (which may
    /// answer from a memo: a commit's links are a function of its id). Iterative: a history of any
    /// length walks on a stack of its own.
    public static func history(from tips: [ObjectID], links: (ObjectID) throws -> CommitLinks) throws -> [CommitLinks] {
        var out = [CommitLinks]()
        var seen = Set<ObjectID>()
        var stack = tips.reversed().map { (id: $0, parentsDone: false, links: CommitLinks?.none) }
        while let (id, parentsDone, read) = stack.popLast() {
            if parentsDone, let read { out.append(read); continue }
            guard seen.insert(id).inserted else { continue }
            let commit = try links(id)
            stack.append((id, true, commit))
            stack += commit.parents.reversed().map { ($0, false, nil) }
        }
        return out
    }
}
