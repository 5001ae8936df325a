// This file touches the libgit2 C API.
internal import CLibgit2
#if canImport(Glibc)
import Glibc
#endif

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
    /// Reads raw tree bytes: one lookup in a 100,000-entry kind tree costs a scan, not a parse.
    public func entry(at path: String, inTree tree: ObjectID) throws -> TreeEntry? {
        var trees = [ObjectID: RawTree]()
        return try entry(at: path, inTree: tree, reading: &trees)
    }

    /// The entries at `paths` in tree `tree`, in the order of `paths` (nil where there is none):
    /// ``entry(at:inTree:)`` for many paths, reading each directory's tree once.
    public func entries(at paths: [String], inTree tree: ObjectID) throws -> [TreeEntry?] {
        var trees = [ObjectID: RawTree]()
        return try paths.map { try entry(at: $0, inTree: tree, reading: &trees) }
    }

    /// ``entry(at:inTree:)`` taking each tree it reads from `trees` when there, and keeping it there.
    private func entry(at path: String, inTree tree: ObjectID, reading trees: inout [ObjectID: RawTree]) throws -> TreeEntry? {
        let components = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
        var current = tree
        for (position, component) in components.enumerated() {
            let raw: RawTree
            if let known = trees[current] {
                raw = known
            } else {
                raw = try rawTree(current)
                trees[current] = raw
            }
            guard let index = raw.index(of: Array(component)[...]) else { return nil }
            let entry = raw.entries[index]
            if position == components.count - 1 {
                return TreeEntry(name: String(Substring(component)), id: raw.id(entry), kind: raw.kind(entry))
            }
            guard entry.isTree else { return nil }
            current = raw.id(entry)
        }
        return nil
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
    public func writeTree(base: ObjectID?, edits: [TreePath: ObjectID?]) throws -> ObjectID {
        try writeTree(base: base, edits: edits) { try writeLooseObject($0, type: .tree) }
    }

    /// The same, with the new trees added to `pack` (written by the caller) instead of loose
    /// objects: a bulk write then makes one file, not one fsynced file per directory.
    public func writeTree(base: ObjectID?, edits: [TreePath: ObjectID?], into pack: inout ObjectPack) throws -> ObjectID {
        try writeTree(base: base, edits: edits.map { ($0.key, $0.value) }) { try pack.add($0, type: .tree) }
    }

    /// The same, with the edits as a list (each path at most once), as a bulk write has them.
    public func writeTree(base: ObjectID?, edits: [(path: TreePath, blob: ObjectID?)], into pack: inout ObjectPack) throws -> ObjectID {
        try writeTree(base: base, edits: edits) { try pack.add($0, type: .tree) }
    }

    private func writeTree(base: ObjectID?, edits: [TreePath: ObjectID?], store: ([UInt8]) throws -> ObjectID) throws -> ObjectID {
        try writeTree(base: base, edits: edits.map { ($0.key, $0.value) }, store: store)
    }

    private func writeTree(base: ObjectID?, edits: [(path: TreePath, blob: ObjectID?)], store: ([UInt8]) throws -> ObjectID) throws -> ObjectID {
        // The edits as byte paths in byte order: the edits under one directory are then one run.
        var sorted = edits.map { PathEdit(path: Array($0.path.utf8), blob: $0.blob) }
        sorted.sort { a, b in a.path.withUnsafeBytes { first in b.path.withUnsafeBytes { second in Self.bytesPrecede(first, second) } } }
        if let repeated = sorted.indices.dropFirst().first(where: { sorted[$0].path == sorted[$0 - 1].path }) {
            throw GitError(function: "tree edit", code: .other(-1),
                           message: "internal error: path '\(String(decoding: sorted[repeated].path, as: UTF8.self))' edited twice in one tree write")
        }
        return try write(sorted[...], prefix: 0, over: base, store: store) ?? store([])
    }

    /// Writes one directory level by splicing its raw bytes; returns nil when it ends up empty.
    /// `edits` are the sorted edits under the directory, whose path (with its slash) is the first
    /// `prefix` bytes of each.
    private func write(_ edits: ArraySlice<PathEdit>, prefix: Int, over base: ObjectID?,
                       store: ([UInt8]) throws -> ObjectID) throws -> ObjectID? {
        let tree = try base.map(rawTree) ?? RawTree([], id: nil)
        var files = [RawTree.Edit](), directories = [RawTree.Edit]()
        var index = edits.startIndex
        while index < edits.endIndex {
            let path = edits[index].path
            guard let slash = path[prefix...].firstIndex(of: 0x2F) else {
                let name = Array(path[prefix...])
                try RawTree.validate(name)
                files.append(RawTree.Edit(name: name, value: edits[index].blob.map { (isTree: false, id: $0) }))
                index += 1
                continue
            }
            let name = Array(path[prefix..<slash])
            try RawTree.validate(name)
            var end = index + 1
            while end < edits.endIndex, edits[end].path.count > slash, edits[end].path[slash] == 0x2F,
                  edits[end].path[prefix..<slash].elementsEqual(name) {
                end += 1
            }
            let existing = tree.index(of: name[...], isTree: true).map { tree.id(tree.entries[$0]) }
            if let written = try write(edits[index..<end], prefix: slash + 1, over: existing, store: store) {
                directories.append(RawTree.Edit(name: name, value: (isTree: true, id: written)))
            } else if existing != nil {
                // The subtree became empty; a file of that name (existing == nil) is left alone.
                directories.append(RawTree.Edit(name: name, value: nil))
            }
            index = end
        }
        let bytes = tree.applying(files + directories)
        if bytes.isEmpty { return nil }
        if let base, bytes == tree.bytes { return base }
        return try store(bytes)
    }

    private static func bytesPrecede(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        let common = min(first.count, second.count)
        let order = common > 0 ? memcmp(first.baseAddress!, second.baseAddress!, common) : 0
        return order != 0 ? order < 0 : first.count < second.count
    }
}

/// One edit of `writeTree`: a file path's bytes and its new blob, or nil to remove the file.
private struct PathEdit {
    let path: [UInt8]
    let blob: ObjectID?
}

extension TreeEntry {
    init(_ entry: OpaquePointer) {
        let kind: Kind
        switch git_tree_entry_type(entry) {
        case GIT_OBJECT_BLOB: kind = .blob
        case GIT_OBJECT_TREE: kind = .tree
        default: kind = .other
        }
        self.init(name: String(cString: git_tree_entry_name(entry)), id: ObjectID(git_tree_entry_id(entry)), kind: kind)
    }
}
