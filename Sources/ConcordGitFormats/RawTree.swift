import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tree object read as its raw bytes: `<mode> <name>\0<20-byte id>` per entry, in git's order,
/// for lookups by name (a scan, no allocation per entry) and for comparing two trees entry by entry.
/// Trees are written by libgit2 (`Repository.writeTree`; bench rows G1).
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
    ///
    /// Works on the bytes in place and skips what both trees share without looking at it entry
    /// by entry: the entries inside their identical first bytes, and, after a difference, all
    /// the rest when the rest of both trees is byte-identical (the entries that follow are then
    /// read alike, pair by pair, as the walk would pair them). With slices and a step per entry,
    /// walking a 256-directory kind tree was most of checking an incoming commit's tree (bench
    /// row B7). A test compares it with the straightforward walk on random trees, ordered or not.
    package static func forEachDifference<Failure: Error>(from old: RawTree, to new: RawTree,
                                                          _ body: (Entry?, Entry?) throws(Failure) -> Void) throws(Failure) {
        let oldEntries = old.entries, newEntries = new.entries
        guard !oldEntries.isEmpty, !newEntries.isEmpty else {
            for entry in oldEntries { try body(entry, nil) }
            for entry in newEntries { try body(nil, entry) }
            return
        }
        try old.bytes.withUnsafeBufferPointer { (oldBytes) throws(Failure) in
            try new.bytes.withUnsafeBufferPointer { (newBytes) throws(Failure) in
                let oldBase = oldBytes.baseAddress!, newBase = newBytes.baseAddress!
                // The entries that end inside the identical first bytes are the same in both.
                let shared = commonPrefix(oldBase, newBase, min(oldBytes.count, newBytes.count))
                var i = entryCount(oldEntries, endingBy: shared), j = i
                var afterDifference = false
                while i < oldEntries.count || j < newEntries.count {
                    let order: Int
                    if i == oldEntries.count {
                        order = 1
                    } else if j == newEntries.count {
                        order = -1
                    } else {
                        let a = oldEntries[i], b = newEntries[j]
                        if afterDifference {
                            afterDifference = false
                            let rest = oldBytes.count - a.start
                            if rest == newBytes.count - b.start, memcmp(oldBase + a.start, newBase + b.start, rest) == 0 { return }
                        }
                        if a.end - a.start == b.end - b.start, memcmp(oldBase + a.start, newBase + b.start, a.end - a.start) == 0 {
                            i += 1
                            j += 1
                            continue
                        }
                        order = compare(oldBase, a, newBase, b)
                    }
                    afterDifference = true
                    if order < 0 {
                        try body(oldEntries[i], nil)
                        i += 1
                    } else if order > 0 {
                        try body(nil, newEntries[j])
                        j += 1
                    } else {
                        try body(oldEntries[i], newEntries[j])
                        i += 1
                        j += 1
                    }
                }
            }
        }
    }

    /// Whether every entry sorts strictly after the one before it (git's order, no name twice,
    /// not even as a file and a directory).
    package var isStrictlyOrdered: Bool {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return true }
            for index in entries.indices.dropFirst() {
                let a = entries[index - 1], b = entries[index]
                let aCount = a.nameEnd - a.nameStart
                if Self.compare(base, a, base, b) >= 0
                    || (aCount == b.nameEnd - b.nameStart && memcmp(base + a.nameStart, base + b.nameStart, aCount) == 0) {
                    return false
                }
            }
            return true
        }
    }

    /// `compare` for entry `a` of the tree bytes at `aBase` and entry `b` of those at `bBase`.
    private static func compare(_ aBase: UnsafePointer<UInt8>, _ a: Entry, _ bBase: UnsafePointer<UInt8>, _ b: Entry) -> Int {
        let aCount = a.nameEnd - a.nameStart, bCount = b.nameEnd - b.nameStart, common = min(aCount, bCount)
        let order = memcmp(aBase + a.nameStart, bBase + b.nameStart, common)
        if order != 0 { return order < 0 ? -1 : 1 }
        let next = aCount > common ? Int(aBase[a.nameStart + common]) : (a.isTree ? 0x2F : 0)
        let other = bCount > common ? Int(bBase[b.nameStart + common]) : (b.isTree ? 0x2F : 0)
        return next - other
    }

    /// How many of the first bytes at `a` and `b` are the same (of `count`).
    private static func commonPrefix(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Int {
        var offset = 0
        while offset + 8 <= count,
              UnsafeRawPointer(a + offset).loadUnaligned(as: UInt64.self) == UnsafeRawPointer(b + offset).loadUnaligned(as: UInt64.self) {
            offset += 8
        }
        while offset < count, a[offset] == b[offset] { offset += 1 }
        return offset
    }

    /// How many of `entries` (in byte order) end at or before byte `offset`.
    private static func entryCount(_ entries: [Entry], endingBy offset: Int) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].end <= offset { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
