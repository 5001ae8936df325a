/// Splicing edits into a tree's raw bytes, for bulk writes (`Repository.writeTreeBySplicing`): the
/// unchanged runs of entries are copied as they are, so a directory costs a scan and a few copies.
extension RawTree {
    /// A new entry for a tree: its name and what it points at, or nil to remove the entry of that name.
    package struct Edit {
        package let name: [UInt8]
        package let value: (isTree: Bool, id: ObjectID)?

        package init(name: [UInt8], value: (isTree: Bool, id: ObjectID)?) {
            (self.name, self.value) = (name, value)
        }
    }

    /// The tree bytes with `edits` applied (at most one edit per name): an edit replaces any entry
    /// of the same name, file or directory, as git's treebuilder does; new entries go in git's order.
    package func applying(_ edits: [Edit]) -> [UInt8] {
        var removed = Set<Int>()
        var insertions = [(position: Int, edit: Edit)]()
        for edit in edits {
            if let existing = index(of: edit.name[...]) { removed.insert(existing) }
            if let value = edit.value { insertions.append((lowerBound(edit.name[...], isTree: value.isTree), edit)) }
        }
        insertions.sort { lhs, rhs in
            lhs.position != rhs.position ? lhs.position < rhs.position
                : Self.compare(lhs.edit.name[...], lhs.edit.value!.isTree, rhs.edit.name[...], rhs.edit.value!.isTree) < 0
        }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + insertions.count * 64)
        var copiedUpTo = 0   // entries[0..<copiedUpTo] are done
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
        for (position, edit) in insertions {
            copyEntries(upTo: position)
            let value = edit.value!
            out += Array((value.isTree ? "40000 " : "100644 ").utf8)
            out += edit.name
            out.append(0)
            out += value.id.bytes
        }
        copyEntries(upTo: entries.count)
        return out
    }
}
