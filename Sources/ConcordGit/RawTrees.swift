// This file touches the libgit2 C API.
internal import CLibgit2
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tree object handled as its raw bytes: `<mode> <name>\0<20-byte id>` per entry, in git's order.
///
/// A record kind is one directory, so its tree can hold 100,000 entries (4 MB). libgit2's treebuilder
/// parses every entry into its own allocation, and writing hashes with SHA-1DC and deflates at zlib's
/// default level: about 150 ms to change one entry. Here an edit copies the unchanged runs of bytes
/// around the changed entries, so the cost is a scan, a few `memcpy`s, one SHA-1 and one level-1 deflate.
struct RawTree {
    /// One entry's offsets into `bytes`: the entry starts at `start`, its name spans
    /// `nameStart..<nameEnd`, and its id follows the NUL at `nameEnd`.
    struct Entry {
        let start: Int
        let nameStart: Int
        let nameEnd: Int
        let isTree: Bool
        var end: Int { nameEnd + 21 }
    }

    let bytes: [UInt8]
    let entries: [Entry]

    /// Parses `bytes`; a malformed tree is refused rather than half-read.
    init(_ bytes: [UInt8], id: ObjectID?) throws {
        self.bytes = bytes
        var entries = [Entry]()
        entries.reserveCapacity(bytes.count / 40)
        let ok = bytes.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            let count = buffer.count
            var offset = 0
            while offset < count {
                var space = offset
                while space < count && space - offset < 7 && base[space] != 0x20 { space += 1 }
                guard space < count, base[space] == 0x20, space > offset else { return false }
                guard let nul = memchr(base + space + 1, 0, count - space - 1) else { return false }
                let nameEnd = UnsafePointer<UInt8>(nul.assumingMemoryBound(to: UInt8.self)) - base
                guard nameEnd > space + 1, nameEnd + 21 <= count else { return false }
                let isTree = space - offset == 5 && base[offset] == UInt8(ascii: "4")
                entries.append(Entry(start: offset, nameStart: space + 1, nameEnd: nameEnd, isTree: isTree))
                offset = nameEnd + 21
            }
            return true
        }
        guard ok else { throw GitError(function: "tree parse", code: .other(-1), message: "tree \(id?.hex ?? "(new)") is malformed") }
        self.entries = entries
    }

    func name(_ entry: Entry) -> ArraySlice<UInt8> { bytes[entry.nameStart..<entry.nameEnd] }

    func id(_ entry: Entry) -> ObjectID { ObjectID(bytes: Array(bytes[(entry.nameEnd + 1)..<entry.end])) }

    /// The mode digits of `entry` (e.g. "100644", "40000").
    func mode(_ entry: Entry) -> ArraySlice<UInt8> { bytes[entry.start..<(entry.nameStart - 1)] }

    /// The index of the entry named `name` (a file or a directory), or nil.
    func index(of name: ArraySlice<UInt8>) -> Int? {
        index(of: name, isTree: false) ?? index(of: name, isTree: true)
    }

    /// The index of the entry named `name` that is (or is not) a directory, or nil.
    func index(of name: ArraySlice<UInt8>, isTree: Bool) -> Int? {
        let position = lowerBound(name, isTree: isTree)
        guard position < entries.count, entries[position].isTree == isTree,
              self.name(entries[position]).elementsEqual(name) else { return nil }
        return position
    }

    /// What `entry` points at, as libgit2 classifies it (a symlink is a blob, a submodule is neither).
    func kind(_ entry: Entry) -> TreeEntry.Kind {
        if entry.isTree { return .tree }
        let mode = self.mode(entry)
        return mode.first == UInt8(ascii: "1") && !mode.elementsEqual("160000".utf8) ? .blob : .other
    }

    /// The first position whose entry sorts at or after (`name`, `isTree`) in git's order.
    func lowerBound(_ name: ArraySlice<UInt8>, isTree: Bool) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            let entry = entries[middle]
            if Self.compare(self.name(entry), entry.isTree, name, isTree) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// git's `base_name_compare`: names compare bytewise, a directory as if its name ended in "/".
    static func compare(_ a: ArraySlice<UInt8>, _ aIsTree: Bool, _ b: ArraySlice<UInt8>, _ bIsTree: Bool) -> Int {
        let common = min(a.count, b.count)
        var i = a.startIndex, j = b.startIndex
        for _ in 0..<common {
            if a[i] != b[j] { return Int(a[i]) - Int(b[j]) }
            i += 1
            j += 1
        }
        let next: (ArraySlice<UInt8>, Int, Bool) -> Int = { name, index, isTree in
            index < name.endIndex ? Int(name[index]) : (isTree ? 0x2F : 0)
        }
        return next(a, i, aIsTree) - next(b, j, bIsTree)
    }

    /// Walks `old` and `new` side by side in git's order and calls `body` for every entry that is
    /// not byte-identical in both: (old, nil) removed, (nil, new) added, (old, new) changed. Two
    /// entries pair up when they have the same name and are both trees or both not.
    static func forEachDifference(from old: RawTree, to new: RawTree,
                                  _ body: (Entry?, Entry?) throws -> Void) rethrows {
        var i = 0, j = 0
        while i < old.entries.count || j < new.entries.count {
            let order: Int
            if i == old.entries.count {
                order = 1
            } else if j == new.entries.count {
                order = -1
            } else {
                let a = old.entries[i], b = new.entries[j]
                order = compare(old.name(a), a.isTree, new.name(b), b.isTree)
            }
            if order < 0 {
                try body(old.entries[i], nil)
                i += 1
            } else if order > 0 {
                try body(nil, new.entries[j])
                j += 1
            } else {
                let a = old.entries[i], b = new.entries[j]
                if !old.bytes[a.start..<a.end].elementsEqual(new.bytes[b.start..<b.end]) { try body(a, b) }
                i += 1
                j += 1
            }
        }
    }

    /// A new entry for a tree: mode digits, name and id.
    struct Edit {
        let name: [UInt8]
        /// The new entry, or nil to remove whatever entry has this name.
        let value: (isTree: Bool, id: ObjectID)?
    }

    /// The tree bytes with `edits` applied: an edit replaces any entry of the same name (file or
    /// directory), as git's treebuilder does; unchanged runs of entries are copied as they are.
    func applying(_ edits: [Edit]) -> [UInt8] {
        var removed = Set<Int>()
        var insertions = [(position: Int, edit: Edit)]()
        for edit in edits {
            let name = edit.name[...]
            if let existing = index(of: name) { removed.insert(existing) }
            if let value = edit.value {
                insertions.append((lowerBound(name, isTree: value.isTree), edit))
            }
        }
        insertions.sort { lhs, rhs in
            lhs.position != rhs.position ? lhs.position < rhs.position
                : Self.compare(lhs.edit.name[...], lhs.edit.value!.isTree, rhs.edit.name[...], rhs.edit.value!.isTree) < 0
        }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + insertions.count * 64)
        var copiedUpTo = 0   // entries[0..<copiedUpTo] are done
        var pending = insertions[...]
        var skipped = removed.sorted()[...]
        func copyEntries(upTo limit: Int) {
            var index = copiedUpTo
            while index < limit {
                while let first = skipped.first, first < index { skipped.removeFirst() }
                let stop = min(limit, skipped.first ?? limit)
                if stop > index {
                    out += bytes[entries[index].start..<entries[stop - 1].end]
                    index = stop
                }
                if index < limit, skipped.first == index { index += 1 }
            }
            copiedUpTo = limit
        }
        while let next = pending.first {
            copyEntries(upTo: next.position)
            pending.removeFirst()
            let value = next.edit.value!
            out += Array((value.isTree ? "40000 " : "100644 ").utf8)
            out += next.edit.name
            out.append(0)
            out += value.id.bytes
        }
        copyEntries(upTo: entries.count)
        return out
    }

    /// Refuses names git would refuse in a tree (`GitPath.isSafeName`).
    static func validate(_ name: [UInt8]) throws {
        guard GitPath.isSafeName(name) else {
            throw GitError(function: "tree edit", code: .other(-1),
                           message: "invalid path component '\(String(decoding: name, as: UTF8.self))'")
        }
    }
}

extension Repository {
    /// The raw bytes of object `id`, checking that it is a `type` object.
    func rawObject(_ id: ObjectID, type expected: git_object_t) throws -> [UInt8] {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, handle))
        defer { git_odb_free(odb) }
        var oid = id.raw
        var object: OpaquePointer?
        try check("git_odb_read", git_odb_read(&object, odb, &oid))
        defer { git_odb_object_free(object) }
        guard git_odb_object_type(object) == expected else {
            throw GitError(function: "git_odb_read", code: .other(-1), message: "object \(id) has the wrong type")
        }
        let size = git_odb_object_size(object)
        guard size > 0, let data = git_odb_object_data(object) else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: size))
    }

    /// The tree `id`. A sync reads the trees a fetch just compared (the new ones and their
    /// parents') once more to find the changed files: those come from `fetchedTrees`, which
    /// `changedFiles` empties when it is done. Ids name content, and each kept tree was hashed,
    /// so a tree read from another repository is the same tree.
    func rawTree(_ id: ObjectID) throws -> RawTree {
        if let tree = fetchedTrees[id] { return tree }
        return try RawTree(rawObject(id, type: GIT_OBJECT_TREE), id: id)
    }

    /// Writes `bytes` as a loose object of `type` unless the database already has it: SHA-1 in
    /// software with the CPU's SHA extensions, compressed as `ObjectCompressor` says, fsynced file
    /// and directory.
    func writeLooseObject(_ bytes: [UInt8], type: ObjectType) throws -> ObjectID {
        let id = ObjectPack.id(of: bytes, type: type)
        if contains(id) { return id }
        var deflated = [UInt8]()
        try ObjectCompressor().append(ObjectPack.header(type: type, size: bytes.count) + bytes, to: &deflated)
        let hex = id.hex
        let directory = gitDirectory + "objects/" + hex.prefix(2)
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw GitError(function: "mkdir", code: .other(-1), message: "cannot create \(directory)")
        }
        do {
            // git's own temporary name: `git fsck` ignores it and `git prune` removes a stale one.
            try FileIO.write(deflated, to: directory + "/" + hex.dropFirst(2), makingParents: false, mode: 0o444,
                             durable: true, temporary: directory + "/tmp_obj_concord_\(getpid())")
            try FileIO.syncDirectory(directory)
        } catch {
            throw GitError(function: "write object", code: .other(-1), message: error.description)
        }
        return id
    }
}
