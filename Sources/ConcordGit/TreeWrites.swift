// This file touches the libgit2 C API.
internal import CLibgit2
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Repository {
    /// `git_tree_create_updated` over `base` (or nothing) with `edits`, after the checks it lacks:
    /// each path once, and no removal of a file `base` does not have (libgit2 fails on those; here
    /// they change nothing). Every component is a name git accepts: a `TreePath` is made only
    /// through `GitPath`'s rules. A new file where `base` has a directory replaces the directory,
    /// and a new file below a path `base` has as a file replaces that file; libgit2 refuses such a
    /// swap in one call ("D/F conflict"), so then what the new files displace is removed first and
    /// the new files added over that tree.
    func writeTreeWithLibgit2(base: ObjectID?, edits: [(path: TreePath, blob: ObjectID?)]) throws -> ObjectID {
        var seen = Set<TreePath>()
        seen.reserveCapacity(edits.count)
        var lookup = base.map { TreeLookup(repository: self, root: $0) }
        var removals = [String](), upserts = [(path: String, blob: ObjectID?)](), displaced = Set<String>()
        upserts.reserveCapacity(edits.count)
        for edit in edits {
            guard seen.insert(edit.path).inserted else {
                throw GitError(function: "tree edit", code: .other(-1),
                               message: "internal error: path '\(edit.path)' edited twice in one tree write")
            }
            let path = edit.path.string
            guard let blob = edit.blob else {
                if try lookup?.kind(of: path) == .blob { removals.append(path) }
                continue
            }
            upserts.append((path, blob))
            guard lookup != nil else { continue }
            if try lookup?.kind(of: path) == .tree { displaced.insert(path) }
            var prefix = ""
            for component in path.utf8.split(separator: 0x2F).dropLast() {
                prefix += (prefix.isEmpty ? "" : "/") + String(decoding: component, as: UTF8.self)
                if try lookup?.kind(of: prefix) == .blob { displaced.insert(prefix) }
            }
        }
        guard !displaced.isEmpty else { return try createUpdatedTree(base: base, edits: removals.map { ($0, nil) } + upserts) }
        func isUnderDisplaced(_ path: String) -> Bool {
            displaced.contains { path.hasPrefix($0 + "/") }
        }
        let firstPass = displaced.filter { !isUnderDisplaced($0) }.sorted()
            + removals.filter { !displaced.contains($0) && !isUnderDisplaced($0) }
        let between = try createUpdatedTree(base: base, edits: firstPass.map { ($0, nil) })
        return try createUpdatedTree(base: between, edits: upserts)
    }

    /// `git_tree_create_updated` itself, with no checks (bench row G1 times it bare).
    func createUpdatedTree(base: ObjectID?, edits: [(path: String, blob: ObjectID?)]) throws -> ObjectID {
        let paths = edits.map { strdup($0.path) }
        defer { paths.forEach { free($0) } }
        var updates = [git_tree_update]()
        updates.reserveCapacity(edits.count)
        for (edit, path) in zip(edits, paths) {
            var update = git_tree_update()
            update.action = edit.blob == nil ? GIT_TREE_UPDATE_REMOVE : GIT_TREE_UPDATE_UPSERT
            update.id = edit.blob?.raw ?? git_oid()
            update.filemode = GIT_FILEMODE_BLOB
            update.path = UnsafePointer(path)
            updates.append(update)
        }
        func create(over tree: OpaquePointer?) throws -> ObjectID {
            var oid = git_oid()
            try check("git_tree_create_updated", git_tree_create_updated(&oid, handle, tree, updates.count, updates))
            return ObjectID(oid)
        }
        guard let base else { return try create(over: nil) }
        return try withTree(base) { try create(over: $0) }
    }
}

/// What is at a path of one tree (a file, a directory or nothing), each directory read once.
private struct TreeLookup {
    let repository: Repository
    let root: ObjectID
    /// Directory path ("" for the root) → its tree, or nil where there is no such directory.
    private var directories = [String: RawTree?]()

    init(repository: Repository, root: ObjectID) {
        self.repository = repository
        self.root = root
    }

    mutating func kind(of path: String) throws -> TreeEntry.Kind? {
        let (directory, name) = Self.split(path)
        guard let tree = try tree(at: directory), let index = tree.index(of: Array(name.utf8)[...]) else { return nil }
        return tree.entries[index].isTree ? .tree : .blob
    }

    private mutating func tree(at directory: String) throws -> RawTree? {
        if let known = directories[directory] { return known }
        let found: RawTree?
        if directory.isEmpty {
            found = try repository.rawTree(root)
        } else {
            let (parent, name) = Self.split(directory)
            if let parentTree = try tree(at: parent), let index = parentTree.index(of: Array(name.utf8)[...], isTree: true) {
                found = try repository.rawTree(parentTree.id(parentTree.entries[index]))
            } else {
                found = nil
            }
        }
        directories[directory] = found
        return found
    }

    private static func split(_ path: String) -> (directory: String, name: Substring) {
        guard let slash = path.lastIndex(of: "/") else { return ("", path[...]) }
        return (String(path[..<slash]), path[path.index(after: slash)...])
    }
}
