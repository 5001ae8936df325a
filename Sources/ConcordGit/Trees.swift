// This file touches the libgit2 C API.
internal import CLibgit2

/// One entry of a tree, as a value.
public struct TreeEntry: Sendable, Hashable {
    public enum Kind: Sendable, Hashable { case blob, tree, other }
    public let name: String
    public let id: ObjectID
    public let kind: Kind
}

extension Repository {
    /// Calls `body` with tree `id`, freeing it afterwards.
    func withTree<T>(_ id: ObjectID, _ body: (OpaquePointer) throws -> T) throws -> T {
        var oid = id.raw
        var tree: OpaquePointer?
        try check("git_tree_lookup", git_tree_lookup(&tree, handle, &oid))
        guard let tree else { throw GitError(function: "git_tree_lookup", code: .notFound, message: "tree \(id) not found") }
        defer { git_tree_free(tree) }
        return try body(tree)
    }

    /// The entry at `path` (slash-separated, relative to the tree's root), or nil if there is none.
    public func entry(at path: String, inTree tree: ObjectID) throws -> TreeEntry? {
        try withTree(tree) { (root) -> TreeEntry? in
            var entry: OpaquePointer?
            let result = git_tree_entry_bypath(&entry, root, path)
            if result == GIT_ENOTFOUND.rawValue { return nil }
            try check("git_tree_entry_bypath", result)
            guard let entry else { return nil }
            defer { git_tree_entry_free(entry) }
            return TreeEntry(entry)
        }
    }

    /// The entries directly inside directory `path` ("" for the root), sorted by name; empty if it does not exist.
    public func entries(inDirectory path: String, ofTree tree: ObjectID) throws -> [TreeEntry] {
        let directory: ObjectID
        if path.isEmpty {
            directory = tree
        } else {
            guard let entry = try entry(at: path, inTree: tree), entry.kind == .tree else { return [] }
            directory = entry.id
        }
        return try withTree(directory) { (handle) -> [TreeEntry] in
            let count = git_tree_entrycount(handle)
            var out = [TreeEntry]()
            out.reserveCapacity(count)
            for index in 0..<count {
                if let entry = git_tree_entry_byindex(handle, index) { out.append(TreeEntry(entry)) }
            }
            return out
        }
    }

    /// Writes a new tree: `base` (or an empty tree) with `edits` applied, where each edit maps a
    /// slash-separated file path to a blob id, or to nil to remove the file. Only the subtrees on the
    /// edited paths are rewritten; every other subtree is reused by id. Directories left empty vanish.
    public func writeTree(base: ObjectID?, edits: [String: ObjectID?]) throws -> ObjectID {
        var root = DirectoryEdits()
        for (path, blob) in edits {
            root.add(path.split(separator: "/", omittingEmptySubsequences: true).map(String.init), blob)
        }
        return try write(root, over: base) ?? writeEmptyTree()
    }

    private func writeEmptyTree() throws -> ObjectID {
        try withBuilder(base: nil) { (builder) -> ObjectID in
            var oid = git_oid()
            try check("git_treebuilder_write", git_treebuilder_write(&oid, builder))
            return ObjectID(oid)
        }
    }

    /// Writes one directory level; returns nil when the directory ends up empty.
    private func write(_ edits: DirectoryEdits, over base: ObjectID?) throws -> ObjectID? {
        try withBuilder(base: base) { (builder) -> ObjectID? in
            for (name, blob) in edits.files {
                if let blob {
                    var oid = blob.raw
                    try check("git_treebuilder_insert",
                              git_treebuilder_insert(nil, builder, name, &oid, GIT_FILEMODE_BLOB))
                } else if git_treebuilder_get(builder, name) != nil {
                    try check("git_treebuilder_remove", git_treebuilder_remove(builder, name))
                }
            }
            for (name, child) in edits.directories {
                var existing: ObjectID?
                if let entry = git_treebuilder_get(builder, name), git_tree_entry_type(entry) == GIT_OBJECT_TREE {
                    existing = ObjectID(git_tree_entry_id(entry))
                }
                if let written = try write(child, over: existing) {
                    var oid = written.raw
                    try check("git_treebuilder_insert",
                              git_treebuilder_insert(nil, builder, name, &oid, GIT_FILEMODE_TREE))
                } else if existing != nil {
                    // The subtree became empty; a file of that name (existing == nil) is left alone.
                    try check("git_treebuilder_remove", git_treebuilder_remove(builder, name))
                }
            }
            if git_treebuilder_entrycount(builder) == 0 { return nil }
            var oid = git_oid()
            try check("git_treebuilder_write", git_treebuilder_write(&oid, builder))
            return ObjectID(oid)
        }
    }

    private func withBuilder<T>(base: ObjectID?, _ body: (OpaquePointer) throws -> T) throws -> T {
        var builder: OpaquePointer?
        if let base {
            try withTree(base) { (tree) in
                try check("git_treebuilder_new", git_treebuilder_new(&builder, handle, tree))
            }
        } else {
            try check("git_treebuilder_new", git_treebuilder_new(&builder, handle, nil))
        }
        guard let builder else { throw GitError(function: "git_treebuilder_new", code: .other(-1), message: "no builder") }
        defer { git_treebuilder_free(builder) }
        return try body(builder)
    }
}

/// The edits under one directory: files by name and subdirectories by name.
private struct DirectoryEdits {
    var files: [String: ObjectID?] = [:]
    var directories: [String: DirectoryEdits] = [:]

    mutating func add(_ components: [String], _ blob: ObjectID?) {
        add(components[...], blob)
    }

    private mutating func add(_ components: ArraySlice<String>, _ blob: ObjectID?) {
        guard let first = components.first else { return }
        if components.count == 1 {
            files[first] = .some(blob)
        } else {
            directories[first, default: DirectoryEdits()].add(components.dropFirst(), blob)
        }
    }
}

extension TreeEntry {
    init(_ entry: OpaquePointer) {
        name = String(cString: git_tree_entry_name(entry))
        id = ObjectID(git_tree_entry_id(entry))
        switch git_tree_entry_type(entry) {
        case GIT_OBJECT_BLOB: kind = .blob
        case GIT_OBJECT_TREE: kind = .tree
        default: kind = .other
        }
    }
}
