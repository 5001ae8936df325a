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
package struct RawTree {
    /// One entry's offsets into `bytes`: the entry starts at `start`, its name spans
    /// `nameStart..<nameEnd`, and its id follows the NUL at `nameEnd`.
    package struct Entry {
        package let start: Int
        package let nameStart: Int
        package let nameEnd: Int
        package let isTree: Bool
        package var end: Int { nameEnd + 21 }
    }

    package let bytes: [UInt8]
    package let entries: [Entry]

    /// Parses `bytes`; a malformed tree is refused rather than half-read.
    package init(_ bytes: [UInt8], id: ObjectID?) throws {
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

    package func name(_ entry: Entry) -> ArraySlice<UInt8> { bytes[entry.nameStart..<entry.nameEnd] }

    package func id(_ entry: Entry) -> ObjectID { ObjectID(bytes: bytes[(entry.nameEnd + 1)..<entry.end]) }

    /// The mode digits of `entry` (e.g. "100644", "40000").
    package func mode(_ entry: Entry) -> ArraySlice<UInt8> { bytes[entry.start..<(entry.nameStart - 1)] }

    /// The index of the entry named `name` (a file or a directory), or nil.
    package func index(of name: ArraySlice<UInt8>) -> Int? {
        index(of: name, isTree: false) ?? index(of: name, isTree: true)
    }

    /// The index of the entry named `name` that is (or is not) a directory, or nil.
    package func index(of name: ArraySlice<UInt8>, isTree: Bool) -> Int? {
        let position = lowerBound(name, isTree: isTree)
        guard position < entries.count, entries[position].isTree == isTree,
              self.name(entries[position]).elementsEqual(name) else { return nil }
        return position
    }

    /// What `entry` points at, as libgit2 classifies it (a symlink is a blob, a submodule is neither).
    package func kind(_ entry: Entry) -> TreeEntry.Kind {
        if entry.isTree { return .tree }
        let mode = self.mode(entry)
        return mode.first == UInt8(ascii: "1") && !mode.elementsEqual("160000".utf8) ? .blob : .other
    }

    /// The first position whose entry sorts at or after (`name`, `isTree`) in git's order.
    package func lowerBound(_ name: ArraySlice<UInt8>, isTree: Bool) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            let entry = entries[middle]
            if Self.compare(self.name(entry), entry.isTree, name, isTree) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// git's `base_name_compare`: names compare bytewise, a directory as if its name ended in "/".
    package static func compare(_ a: ArraySlice<UInt8>, _ aIsTree: Bool, _ b: ArraySlice<UInt8>, _ bIsTree: Bool) -> Int {
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
    package static func forEachDifference(from old: RawTree, to new: RawTree,
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
    package struct Edit {
        package let name: [UInt8]
        /// The new entry, or nil to remove whatever entry has this name.
        package let value: (isTree: Bool, id: ObjectID)?

        package init(name: [UInt8], value: (isTree: Bool, id: ObjectID)?) {
            self.name = name
            self.value = value
        }
    }

    /// The tree bytes with `edits` applied: an edit replaces any entry of the same name (file or
    /// directory), as git's treebuilder does; unchanged runs of entries are copied as they are.
    package func applying(_ edits: [Edit]) -> [UInt8] {
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
            value.id.append(to: &out)
        }
        copyEntries(upTo: entries.count)
        return out
    }

    /// Refuses names git would refuse in a tree (`GitPath.isSafeName`).
    package static func validate(_ name: [UInt8]) throws {
        guard GitPath.isSafeName(name) else {
            throw GitError(function: "tree edit", code: .other(-1),
                           message: "invalid path component '\(String(decoding: name, as: UTF8.self))'")
        }
    }
}
