// This file touches zlib (through CShims).
internal import CShims
import Foundation

/// One pack file of a repository this device does not trust (a path remote) with its index, read
/// here for the objects stored whole, the way concord's pushes store them. libgit2 read them
/// under one process-wide lock, inflating each with a new stream: two threads reading bench row
/// B5's 10,000 records that way took ~31 ms, here ~8 ms (see `SourceObjects`). An object stored
/// as a delta, or anything unusual about an entry, is left to libgit2 (`object` returns nil).
///
/// Nothing read here is trusted: whoever copies an object hashes it against its id first. A forged
/// index can only point at other bytes, and every read is bounded: the index by its file size,
/// an entry by the size it declares (at most `limit`) and by the pack's length. The pack is read
/// with `pread`, never mapped, so a file cut short meanwhile is a failed read, not a crash.
final class UntrustedPack: @unchecked Sendable {   // unchecked: shared by one fetch's readers; `opened` is set once, under `lock`
    private let packPath: String
    let indexPath: String
    private let lock = NSLock()
    /// nil until first used (a remote holds a pack per push: most are never looked in); then
    /// the opened files, or why they are not a usable pack and index.
    private var opened: Result<Opened, Unusable>?

    /// A class: a reader asks every pack of a remote pushed to hundreds of times whether it holds
    /// each object, and copying these fields (retaining the index) per question was most of it.
    final class Opened {
        let descriptor: Int32
        /// Where the entries end (the pack's trailing checksum starts).
        let entriesEnd: Int
        let index: [UInt8]
        let count: Int
        let largeOffsets: Int

        init(descriptor: Int32, entriesEnd: Int, index: [UInt8], count: Int, largeOffsets: Int) {
            self.descriptor = descriptor
            self.entriesEnd = entriesEnd
            self.index = index
            self.count = count
            self.largeOffsets = largeOffsets
        }

        /// Where the sorted ids start: after the header and the 256-entry fan-out table.
        static let ids = 8 + 1024
        private var offsets: Int { Self.ids + count * 24 }

        /// Where the entry of the index's `position`-th id starts in the pack; nil when that
        /// offset is outside the pack's entries, or names a slot past the large-offset table.
        func entryOffset(_ position: Int) -> Int? {
            var offset = bigEndian32(index, at: offsets + position * 4)
            if offset & 0x8000_0000 != 0 {
                let slot = offset & 0x7FFF_FFFF
                guard slot < largeOffsets else { return nil }
                let at = offsets + count * 4 + slot * 8
                offset = bigEndian32(index, at: at) << 32 | bigEndian32(index, at: at + 4)
            }
            return offset >= 12 && offset < entriesEnd ? offset : nil
        }

        /// What makes this index unfit for libgit2 (see `refuseIfDamaged`), given the pack file's
        /// first 12 and last 20 bytes; nil when nothing does.
        func damage(packHeader header: [UInt8], packTrailer trailer: [UInt8]) -> String? {
            guard header.starts(with: Array("PACK".utf8)), [2, 3].contains(bigEndian32(header, at: 4)),
                  bigEndian32(header, at: 8) == count else { return "its pack file's header does not match it" }
            // The index ends with the pack's checksum, then its own.
            guard index[(index.count - 40)..<(index.count - 20)].elementsEqual(trailer) else {
                return "it belongs to another pack file"
            }
            var bucket = 0
            for position in 0..<count {
                let id = Self.ids + position * 20
                if position > 0, !index[(id - 20)..<id].lexicographicallyPrecedes(index[id..<(id + 20)]) {
                    return "its ids are not in order"
                }
                while bucket < Int(index[id]) {   // the fan-out counts the ids below each first byte
                    guard bigEndian32(index, at: 8 + bucket * 4) == position else { return "its fan-out table does not match its ids" }
                    bucket += 1
                }
                guard entryOffset(position) != nil else { return "an offset points outside the pack or its large-offset table" }
            }
            while bucket < 256 {
                guard bigEndian32(index, at: 8 + bucket * 4) == count else { return "its fan-out table does not match its ids" }
                bucket += 1
            }
            return nil
        }
    }

    /// Why a pack is not read here: absent (no index or no pack file: libgit2 skips it too), or
    /// damaged (libgit2 would read it, and 1.5.1 crashes on some such indexes).
    private enum Unusable: Error {
        case absent
        case damaged(String)
    }

    init(packPath: String, indexPath: String) {
        self.packPath = packPath
        self.indexPath = indexPath
    }

    deinit {
        if case .success(let files)? = opened { close(files.descriptor) }
    }

    /// The opened files, or nil when they are not a usable pack and index (opened on first use).
    var files: Opened? {
        try? openedFiles().get()
    }

    private func openedFiles() -> Result<Opened, Unusable> {
        lock.lock()
        defer { lock.unlock() }
        if let opened { return opened }
        let made = Self.openFiles(packPath: packPath, indexPath: indexPath)
        opened = made
        return made
    }

    /// Refuses a pack whose index is damaged or forged, before libgit2 is let near it: libgit2
    /// 1.5.1 trusts an index's order and offsets (a remote's index with 16 bytes of garbage among
    /// its ids crashed a clone with SIGSEGV). Checked as `git verify-pack` would: version 2, the
    /// fan-out agreeing with the ids, the ids in strictly increasing order, every offset inside
    /// the pack's entries (a large one inside the large-offset table), and the pack's header and
    /// checksum those of the pack the index describes.
    /// `naming`: the index to name in the refusal (this one is a copy of it).
    func refuseIfDamaged(naming name: String? = nil) throws {
        if case .failure(.damaged(let reason)) = openedFiles() {
            throw SourceObjects.refusal("the remote's pack index \(name ?? indexPath) is damaged (\(reason))")
        }
    }

    /// An offset delta's distance back to its base, read from `bytes` at `at` (moved past it) without
    /// reading at or past `end`; nil when it runs past `end` or would overflow.
    static func baseDistance<Bytes: RandomAccessCollection>(_ bytes: Bytes, at: inout Int, end: Int) -> Int?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        guard at < end else { return nil }
        var byte = bytes[at]
        var distance = Int(byte & 0x7F)
        while byte & 0x80 != 0 {
            at += 1
            guard at < end, distance < 1 << 48 else { return nil }
            byte = bytes[at]
            distance = ((distance + 1) << 7) | Int(byte & 0x7F)
        }
        at += 1
        return distance
    }

    /// The two sizes a delta's data starts with (its base's, and what it rebuilds), read from the
    /// first `count` bytes of `data`; nil when they are not both there.
    static func deltaSizes(_ data: [UInt8], count: Int) -> (base: Int, result: Int)? {
        var cursor = 0
        func varint() -> Int? {
            var value = 0, shift = 0
            while cursor < min(count, data.count), shift <= 56 {
                let byte = data[cursor]
                cursor += 1
                value |= Int(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        guard let base = varint(), let result = varint() else { return nil }
        return (base, result)
    }

    /// The most bytes of objects libgit2 may rebuild to read one object through its delta chain:
    /// a chain of deltas each rebuilding a large object (up to 10,000 deep) would hold a fetch, and
    /// the profile lock, for hours.
    static let maxChainBytes = 4 << 30
    static let maxChainDepth = 10_000

    /// Refuses a pack whose deltas libgit2 must not be handed: a delta whose base is itself or
    /// leads back to it (libgit2 1.5.1 spins forever in `git_odb_read_header`, holding the profile
    /// lock), a base outside this pack or not at an entry, an object a delta rebuilds (also in
    /// the middle of a chain) over `maxObjectBytes` (a 7 MB pack made libgit2 take 4 GB), or a
    /// chain deeper than `maxChainDepth` or rebuilding more than `maxChainBytes` in all. Read from
    /// each entry's header and its delta's first bytes (the sizes it declares), nothing rebuilt.
    func refuseUnsoundDeltas(naming name: String? = nil) throws {
        guard let files else { return }
        func refuse(_ reason: String) -> Error {
            SourceObjects.refusal("the remote's pack \(name ?? packPath) is damaged or forged: it has a delta \(reason)")
        }
        // Every entry, in pack order, with the size it declares and (a delta) where its base is.
        var offsets = [Int]()
        offsets.reserveCapacity(files.count)
        for position in 0..<files.count { if let offset = files.entryOffset(position) { offsets.append(offset) } }
        offsets.sort()
        var size = [Int](repeating: 0, count: offsets.count), base = [Int](repeating: -1, count: offsets.count)
        var header = [UInt8](repeating: 0, count: 64), delta = [UInt8](repeating: 0, count: 32)
        var stream = [UInt8](repeating: 0, count: delta.count * 4)   // enough zlib input for `delta`'s bytes
        for (entry, offset) in offsets.enumerated() {
            let available = min(header.count, files.entriesEnd - offset)
            guard available > 0, header.withUnsafeMutableBytes({ files.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<available]), at: offset) }) else {
                throw refuse("at \(offset) that cannot be read")
            }
            guard let (type, declared, headerEnd) = Self.entryHeader(header, at: 0, end: available) else {
                throw refuse("at \(offset) with a damaged header")
            }
            var at = headerEnd
            size[entry] = declared
            guard type == 6 || type == 7 else { continue }
            var baseOffset: Int
            if type == 6 {
                guard let distance = Self.baseDistance(header, at: &at, end: available) else {
                    throw refuse("at \(offset) with a damaged base offset")
                }
                baseOffset = offset - distance
            } else {
                guard at + 20 <= available else { throw refuse("at \(offset) with a damaged header") }
                let id = header.withUnsafeBytes { ObjectID(raw: UnsafeRawBufferPointer(rebasing: $0[at..<(at + 20)])) }
                at += 20
                guard let found = files.offset(of: id) else { throw refuse("at \(offset) whose base \(id) is not in the pack") }
                baseOffset = found
            }
            guard baseOffset != offset else { throw refuse("at \(offset) whose base is itself: its base leads back to itself") }
            guard let baseEntry = Self.position(of: baseOffset, in: offsets) else {
                throw refuse("at \(offset) whose base is not an entry of the pack")
            }
            base[entry] = baseEntry
            // The delta's own header: the size of its base, then the size of what it rebuilds.
            let streamLength = min(stream.count, files.entriesEnd - offset - at)
            guard streamLength > 0,
                  stream.withUnsafeMutableBytes({ files.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<streamLength]), at: offset + at) }) else {
                throw refuse("at \(offset) that cannot be read")
            }
            let produced = stream.withUnsafeBufferPointer { input in
                delta.withUnsafeMutableBufferPointer { concord_inflate_prefix(input.baseAddress, streamLength, $0.baseAddress, $0.count) }
            }
            guard produced > 0, let rebuilt = Self.deltaSizes(delta, count: produced)?.result else { throw refuse("at \(offset) whose data is damaged") }
            guard rebuilt <= SourceObjects.maxObjectBytes else {
                throw refuse("at \(offset) rebuilding \(rebuilt) bytes, over the \(SourceObjects.maxObjectBytes)-byte limit")
            }
            size[entry] = rebuilt
        }
        // Each chain followed to its whole object: no cycle, depth and rebuilt bytes bounded.
        var cost = [Int](repeating: -1, count: offsets.count)   // bytes rebuilt to read the entry; -1 not known yet
        var onChain = [Int](repeating: -1, count: offsets.count)   // the start of the chain being followed through it
        for start in offsets.indices where cost[start] < 0 {
            var chain = [Int]()
            var entry = start
            while cost[entry] < 0 && base[entry] >= 0 {
                chain.append(entry)
                onChain[entry] = start
                guard chain.count <= Self.maxChainDepth else { throw refuse("chain at \(offsets[start]) deeper than \(Self.maxChainDepth)") }
                entry = base[entry]
                if onChain[entry] == start { throw refuse("at \(offsets[entry]) whose base leads back to itself") }
            }
            var total = cost[entry] < 0 ? size[entry] : cost[entry]
            cost[entry] = total
            for link in chain.reversed() {
                total += size[link]
                guard total <= Self.maxChainBytes else {
                    throw refuse("chain at \(offsets[link]) rebuilding more than \(Self.maxChainBytes) bytes")
                }
                cost[link] = total
            }
        }
    }

    /// A pack entry's header in `bytes[start..<end]`: its type (bits 4–6 of the first byte), the
    /// size it declares (4 + 7·n bits, little-endian) and where its data starts; nil when it runs
    /// past `end` or declares more than 60 bits.
    static func entryHeader(_ bytes: [UInt8], at start: Int, end: Int) -> (type: UInt8, size: Int, dataStart: Int)? {
        guard start < end else { return nil }
        var at = start
        var byte = bytes[at]
        var size = Int(byte & 0x0F), shift = 4
        while byte & 0x80 != 0 {
            at += 1
            guard at < end, shift <= 56 else { return nil }
            byte = bytes[at]
            size |= Int(byte & 0x7F) << shift
            shift += 7
        }
        return ((bytes[start] >> 4) & 7, size, at + 1)
    }

    /// The position of `offset` in the sorted `offsets`, if it is one of them.
    private static func position(of offset: Int, in offsets: [Int]) -> Int? {
        var low = 0, high = offsets.count
        while low < high {
            let middle = (low + high) / 2
            if offsets[middle] == offset { return middle }
            if offsets[middle] < offset { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    private static func openFiles(packPath: String, indexPath: String) -> Result<Opened, Unusable> {
        guard let index = try? SourceObjects.smallFile(indexPath, limit: 1 << 30) else { return .failure(.absent) }
        guard index.count >= 8 + 1024 + 40, index.starts(with: [0xFF, 0x74, 0x4F, 0x63, 0, 0, 0, 2]) else {
            return .failure(.damaged("not a version 2 pack index"))
        }
        let count = bigEndian32(index, at: 8 + 255 * 4)   // the fan-out's last count: every id (the rest is checked in `damage`)
        let fixed = Opened.ids + count * 28 + 40
        guard index.count >= fixed, (index.count - fixed) % 8 == 0 else { return .failure(.damaged("its size does not match its object count")) }
        let descriptor = open(packPath, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(.absent) }
        var info = stat()
        var header = [UInt8](repeating: 0, count: 12), trailer = [UInt8](repeating: 0, count: 20)
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size >= 32,
              pread(descriptor, &header, 12, 0) == 12, pread(descriptor, &trailer, 20, off_t(info.st_size) - 20) == 20 else {
            close(descriptor)
            return .failure(.damaged("its pack file cannot be read"))
        }
        let files = Opened(descriptor: descriptor, entriesEnd: Int(info.st_size) - 20, index: index, count: count,
                           largeOffsets: (index.count - fixed) / 8)
        if let problem = files.damage(packHeader: header, packTrailer: trailer) {
            close(descriptor)
            return .failure(.damaged(problem))
        }
        return .success(files)
    }

}

extension UntrustedPack.Opened {
    /// Where the index says object `id` is in the pack, if it lists it.
    func offset(of id: ObjectID) -> Int? {
        let first = Int(id.firstByte)
        var low = first == 0 ? 0 : bigEndian32(index, at: 8 + (first - 1) * 4)
        var high = bigEndian32(index, at: 8 + first * 4)
        let ids = Self.ids
        return index.withUnsafeBytes { bytes in
            while low < high {
                let middle = (low + high) / 2
                let candidate = ObjectID(raw: UnsafeRawBufferPointer(rebasing: bytes[(ids + middle * 20)..<(ids + middle * 20 + 20)]))
                if candidate == id { return entryOffset(middle) }
                if candidate < id { low = middle + 1 } else { high = middle }
            }
            return nil
        }
    }

    /// Reads `count` bytes at `offset` into `buffer` (which has room); false when the file is shorter.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
        var done = 0
        while done < buffer.count {
            let n = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }
}

private func bigEndian32(_ bytes: [UInt8], at offset: Int) -> Int {
    Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
}
