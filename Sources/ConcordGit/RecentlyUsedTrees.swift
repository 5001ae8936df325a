extension TreeChange {
    /// About what holding this change costs in memory: the value, the path's bytes and its array header.
    var heldBytes: Int { MemoryLayout<TreeChange>.stride + 32 + path.count }
}

extension RawTree {
    /// About what holding this tree costs in memory.
    var heldBytes: Int { bytes.count + entries.count * MemoryLayout<Entry>.stride }
}

/// Trees by id, the ones used last kept: new and used trees go to the young generation; when it
/// holds `bytesPerGeneration` bytes it becomes the old one and the previous old one is let go,
/// so at most twice that is held, and a tree used again while old is kept young. Only the bytes
/// are held (parsing them again costs a fraction of reading them): in bench row B7 a commit's
/// trees are ~9 KB of bytes and their parsed entries ~8 KB more.
struct RecentlyUsedTrees {
    let bytesPerGeneration: Int
    private var young = [ObjectID: [UInt8]]()
    private var old = [ObjectID: [UInt8]]()
    private var youngBytes = 0

    init(bytesPerGeneration: Int) {
        self.bytesPerGeneration = bytesPerGeneration
    }

    mutating func tree(_ id: ObjectID) -> RawTree? {
        if let bytes = young[id] { return try? RawTree(bytes, id: id) }
        guard let bytes = old[id] else { return nil }
        keep(bytes, id)
        return try? RawTree(bytes, id: id)
    }

    mutating func add(_ tree: RawTree, _ id: ObjectID) {
        keep(tree.bytes, id)
    }

    private mutating func keep(_ bytes: [UInt8], _ id: ObjectID) {
        guard young[id] == nil, bytes.count <= bytesPerGeneration else { return }
        if youngBytes + bytes.count > bytesPerGeneration {
            old = young
            young = [:]
            youngBytes = 0
        }
        young[id] = bytes
        youngBytes += bytes.count
    }
}
