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
}
