/// The index's cache-tree extension ("TREE"): per directory, in pre-order, `name NUL count SP
/// subtrees LF` then the tree id when `count` ≥ 0. A changed directory is marked invalid (`-1`,
/// no id), as git's `cache_tree_invalidate_path` does; git recomputes it on its next commit.
enum CacheTree {
    /// The extension with the directories in `paths` invalidated, or nil (drop it) if it is malformed.
    static func invalidating(_ paths: Set<[UInt8]>, in data: ArraySlice<UInt8>) -> [UInt8]? {
        var reader = data.startIndex
        var out = [UInt8]()
        out.reserveCapacity(data.count)
        func node(parent: [UInt8]?) -> Bool {
            guard let nul = data[reader...].firstIndex(of: 0) else { return false }
            let name = data[reader..<nul]
            let path = parent.map { $0.isEmpty ? Array(name) : $0 + [0x2F] + name } ?? []
            guard let space = data[(nul + 1)...].firstIndex(of: 0x20),
                  let newline = data[(space + 1)...].firstIndex(of: 0x0A),
                  let count = Int(String(decoding: data[(nul + 1)..<space], as: UTF8.self)),
                  let subtrees = Int(String(decoding: data[(space + 1)..<newline], as: UTF8.self)), subtrees >= 0
            else { return false }
            reader = newline + 1
            let hasID = count >= 0
            if hasID {
                guard reader + 20 <= data.endIndex else { return false }
            }
            out += data[name.startIndex...nul]
            if hasID && !paths.contains(path) {
                out += data[(nul + 1)...(newline)]
                out += data[reader..<(reader + 20)]
            } else {
                out += Array("-1 \(subtrees)\n".utf8)
            }
            if hasID { reader += 20 }
            for _ in 0..<subtrees {
                if !node(parent: path) { return false }
            }
            return true
        }
        guard node(parent: nil), reader == data.endIndex else { return nil }
        return out
    }
}
