// This file touches zlib (through CShims).
internal import CShims

/// The bounds on rebuilt objects and delta chains that `UntrustedPack.refuseUnsoundDeltas` puts on
/// a path remote's packs, for a pack as it arrives from a server (an ssh fetch, a `concord-wait …
/// pack`): read entry by entry from its start, with no index, before libgit2's indexer rebuilds
/// anything. Over ssh, a ~3 KB pack of deltas rebuilding 1 GiB made the device take 1.3 GB.
///
/// Every entry is inflated once here (each at most `SourceObjects.maxObjectBytes`, as it declares)
/// to find where it ends, and an object stored whole is hashed so that a delta may name it as its
/// base. A delta's base must come before it in the pack (git sends offset deltas so) or be an
/// object stored whole in it, or one this repository has (a thin pack's bases): anything else is
/// refused, as a base libgit2 would have to rebuild first, unbounded, to know its size.
enum ArrivingPack {
    /// Refuses `pack` (the whole pack file, header to checksum) when it has an entry that cannot
    /// be read, an object over `SourceObjects.maxObjectBytes` (stored whole, as a delta or rebuilt
    /// by one), a delta whose base is not placed as above, or a chain deeper than
    /// `UntrustedPack.maxChainDepth` or rebuilding more than `UntrustedPack.maxChainBytes`.
    /// `baseSize`: the size of an object this repository has, nil when it has none.
    static func refuseUnsoundDeltas(_ pack: UnsafeRawBufferPointer, baseSize: (ObjectID) -> Int?) throws {
        func refuse(_ reason: String) -> Error {
            SourceObjects.refusal("the server's pack is damaged or forged: it has \(reason)")
        }
        guard pack.count >= 32, pack.starts(with: Array("PACK".utf8)), [2, 3].contains(bigEndian32(pack, at: 4)) else {
            throw refuse("no pack header")
        }
        let count = bigEndian32(pack, at: 8), end = pack.count - 20
        guard let inflater = concord_inflater_new() else { throw refuse("an entry that cannot be read (out of memory)") }
        defer { concord_inflater_free(inflater) }
        var buffer = [UInt8]()
        /// Inflates the zlib stream at `start` into `buffer`; it must hold exactly `size` bytes.
        /// Returns where the stream ends.
        func inflate(at start: Int, size: Int, entry offset: Int) throws -> Int {
            if buffer.count < size + 1 { buffer = [UInt8](repeating: 0, count: size + 1) }
            var consumed = 0
            let result = buffer.withUnsafeMutableBufferPointer { out in
                concord_inflater_run(inflater, pack.baseAddress! + start, end - start, out.baseAddress!, size, &consumed)
            }
            guard result == 0 else { throw refuse("an entry at \(offset) whose data is damaged") }
            return start + consumed
        }
        // For each entry: where it starts, and the bytes and chain depth reading it takes.
        var entryAt = [Int: Int](), cost = [Int](), depth = [Int]()
        var wholeObjects = [ObjectID: Int]()
        cost.reserveCapacity(count)
        depth.reserveCapacity(count)
        var offset = 12
        for entry in 0..<count {
            let headerBytes = Array(pack[offset..<min(end, offset + 32)])
            guard let (type, declared, dataStart) = UntrustedPack.entryHeader(headerBytes, at: 0, end: headerBytes.count) else {
                throw refuse("an entry at \(offset) with a damaged header")
            }
            guard declared <= SourceObjects.maxObjectBytes else {
                throw refuse("an entry at \(offset) of \(declared) bytes, over the \(SourceObjects.maxObjectBytes)-byte limit")
            }
            entryAt[offset] = entry
            var at = offset + dataStart
            // A delta's base: what reading it costs, and how deep its chain is.
            let base: (cost: Int, depth: Int)
            switch type {
            case 1...4:
                let next = try inflate(at: at, size: declared, entry: offset)
                if let objectType = ObjectType(rawValue: type) {
                    wholeObjects[ObjectPack.id(of: Array(buffer[0..<declared]), type: objectType)] = entry
                }
                cost.append(declared)
                depth.append(0)
                offset = next
                continue
            case 6:
                guard let distance = UntrustedPack.baseDistance(pack, at: &at, end: end) else {
                    throw refuse("a delta at \(offset) with a damaged base offset")
                }
                guard let entry = entryAt[offset - distance] else { throw refuse("a delta at \(offset) whose base is not an earlier entry") }
                base = (cost[entry], depth[entry])
            case 7:
                guard at + 20 <= end else { throw refuse("an entry at \(offset) with a damaged header") }
                let id = ObjectID(raw: UnsafeRawBufferPointer(rebasing: pack[at..<(at + 20)]))
                at += 20
                if let entry = wholeObjects[id] {
                    base = (cost[entry], depth[entry])
                } else if let size = baseSize(id) {
                    base = (size, 0)
                } else {
                    throw refuse("a delta at \(offset) whose base \(id) is neither stored whole before it nor in this repository")
                }
            default:
                throw refuse("an entry at \(offset) of unknown type \(type)")
            }
            // The delta's own header: the size of its base, then the size of what it rebuilds.
            let next = try inflate(at: at, size: declared, entry: offset)
            guard let rebuilt = UntrustedPack.deltaSizes(buffer, count: declared)?.result else {
                throw refuse("a delta at \(offset) whose data is damaged")
            }
            guard rebuilt <= SourceObjects.maxObjectBytes else {
                throw refuse("a delta at \(offset) rebuilding \(rebuilt) bytes, over the \(SourceObjects.maxObjectBytes)-byte limit")
            }
            guard base.depth < UntrustedPack.maxChainDepth else {
                throw refuse("a delta chain at \(offset) deeper than \(UntrustedPack.maxChainDepth)")
            }
            guard base.cost + rebuilt <= UntrustedPack.maxChainBytes else {
                throw refuse("a delta chain at \(offset) rebuilding more than \(UntrustedPack.maxChainBytes) bytes")
            }
            cost.append(base.cost + rebuilt)
            depth.append(base.depth + 1)
            offset = next
        }
    }
}

private func bigEndian32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
    Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
}
