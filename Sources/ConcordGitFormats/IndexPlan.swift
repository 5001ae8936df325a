import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How the new index is made from the old one: runs of old bytes and new entries, in order.
struct IndexPlan {
    enum Piece {
        case old(Range<Int>)
        case new(Range<Int>)   // in `newEntries`
    }

    let version: UInt32
    var pieces = [Piece]()
    /// The new and changed entries, back to back.
    var newEntries = [UInt8]()
    /// Where each written update's entry starts in `newEntries`, in the updates' order.
    var entryOffsets = [Int]()
    var count = 0
    /// Kept extensions: signature and payload (the cache tree rewritten, others as they were).
    var extensions = [(signature: [UInt8], payload: [UInt8])]()

    enum Rejection: Error {
        case unsupported, damaged

        var outcome: IndexPatch.Outcome { self == .damaged ? .damaged : .unsupported }
    }

    /// Throws `damaged` when the bytes are not a readable index (the checksum must match when
    /// `verifyChecksum`), `unsupported` when they are an index this does not patch or an update
    /// would clash a file with a directory.
    init(_ bytes: UnsafeRawBufferPointer, updates: [IndexPatch.Update], verifyChecksum: Bool) throws(Rejection) {
        guard bytes.count >= 32, bytes[0] == 0x44, bytes[1] == 0x49, bytes[2] == 0x52, bytes[3] == 0x43 else { throw .damaged }   // "DIRC"
        version = Self.uint32(bytes, 4)
        guard version == 2 || version == 3 else { throw .unsupported }
        let body = bytes.count - 20
        // git 2.40+ with `index.skipHash` writes a null trailer, which git then does not check.
        let nullTrailer = !bytes[body...].contains { $0 != 0 }
        if verifyChecksum && !nullTrailer {
            var hasher = Insecure.SHA1()
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: bytes[0..<body]))
            guard Array(hasher.finalize()).elementsEqual(bytes[body...]) else { throw .damaged }
        }
        let clashes = Clashes(updates)
        // Without a checksum to verify, damage shows as entries out of git's order (name, then stage).
        let entries = try mergeEntries(bytes, body: body, updates: updates, clashes: clashes, checkOrder: verifyChecksum && nullTrailer)
        try keepExtensions(bytes, from: entries.end, body: body, invalidated: clashes.invalidated)
        if entries.namelessEntries { throw .damaged }
    }

    /// Walks the old entries, putting each update in its place (replacing the entry of the same
    /// path); returns where the extensions start, and whether an entry had no name (damage, unless
    /// a split index's "link" extension follows). Old entries are kept as runs of bytes (`pieces`).
    private mutating func mergeEntries(_ bytes: UnsafeRawBufferPointer, body: Int, updates: [IndexPatch.Update],
                                       clashes: Clashes, checkOrder: Bool) throws(Rejection) -> (end: Int, namelessEntries: Bool) {
        newEntries.reserveCapacity(updates.reduce(0) { $0 + (($1.path.count + 70) & ~7) })
        let entryCount = Int(Self.uint32(bytes, 8))
        var pending = updates[...]
        var namelessEntries = false
        var previous: (name: UnsafeRawBufferPointer, stage: Int)?
        var runStart = 12
        var offset = 12
        func flush(upTo end: Int) {
            if end > runStart { pieces.append(.old(runStart..<end)) }
        }
        func emit(_ update: IndexPatch.Update) {
            guard let file = update.file else { return }
            let start = newEntries.count
            entryOffsets.append(start)
            Self.appendEntry(path: update.path, info: file.info, blob: file.blob, to: &newEntries)
            if case .new(let previous)? = pieces.last, previous.upperBound == start {
                pieces[pieces.count - 1] = .new(previous.lowerBound..<newEntries.count)
            } else {
                pieces.append(.new(start..<newEntries.count))
            }
            count += 1
        }
        for _ in 0..<entryCount {
            guard offset + 62 <= body else { throw .damaged }
            let flags = Int(bytes[offset + 60]) << 8 | Int(bytes[offset + 61])
            let extended = flags & 0x4000 != 0
            if extended && version < 3 { throw .damaged }
            let nameStart = offset + (extended ? 64 : 62)
            var nameLength = flags & 0xFFF
            if nameLength == 0xFFF {
                guard let nul = bytes[nameStart..<body].firstIndex(of: 0) else { throw .damaged }
                nameLength = nul - nameStart
            }
            // A split index's replaced entries have no name; so do zeros a crash left in the file.
            if nameLength == 0 { namelessEntries = true }
            let end = offset + ((nameStart - offset + nameLength + 8) & ~7)
            guard end <= body else { throw .damaged }
            let name = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<(nameStart + nameLength)])
            if checkOrder {
                let stage = (flags >> 12) & 3
                if let previous {
                    let order = Self.compare(previous.name, name)
                    if order > 0 || (order == 0 && previous.stage >= stage) { throw .damaged }
                }
                previous = (name, stage)
            }
            if clashes.clash(name, updates: updates) { throw .unsupported }
            // Updates sorting before this entry go in here; an update for this very path replaces it.
            var order = pending.first.map { Self.compare($0.path, name) } ?? 1
            while order < 0 {
                flush(upTo: offset)
                runStart = offset
                emit(pending.removeFirst())
                order = pending.first.map { Self.compare($0.path, name) } ?? 1
            }
            if order == 0 {
                flush(upTo: offset)
                runStart = end
            } else {
                count += 1
            }
            offset = end
        }
        flush(upTo: offset)
        runStart = offset
        for update in pending { emit(update) }

        return (offset, namelessEntries)
    }

    /// Keeps the cache tree (invalidated on the changed paths) and resolve-undo data; drops other
    /// caches (untracked cache, fsmonitor, offset tables), which git rebuilds.
    private mutating func keepExtensions(_ bytes: UnsafeRawBufferPointer, from start: Int, body: Int,
                                         invalidated: Set<[UInt8]>) throws(Rejection) {
        var offset = start
        while offset < body {
            guard offset + 8 <= body else { throw .damaged }
            let signature = Array(bytes[offset..<(offset + 4)])
            let length = Int(Self.uint32(bytes, offset + 4))
            let data = (offset + 8)..<(offset + 8 + length)
            guard data.upperBound <= body else { throw .damaged }
            guard signature.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .damaged }
            let optional = signature[0] >= UInt8(ascii: "A") && signature[0] <= UInt8(ascii: "Z")
            if !optional { throw .unsupported }   // e.g. a split index ("link") or sparse directories ("sdir")
            if signature.elementsEqual("TREE".utf8) {
                if let payload = CacheTree.invalidating(invalidated, in: Array(bytes[data])[...]) {
                    extensions.append((signature, payload))
                }
            } else if signature.elementsEqual("REUC".utf8) {
                extensions.append((signature, Array(bytes[data])))
            }
            offset = data.upperBound
        }
    }

    /// The new index's length in bytes, without its trailing checksum.
    func size(from old: UnsafeRawBufferPointer) -> Int {
        var total = 0
        write(from: old) { total += $0.count }
        return total
    }

    /// Emits the new index (without its trailing checksum) in order.
    func write(from old: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) -> Void) {
        var header = Array(old[0..<8])
        header.appendBigEndian(UInt32(count))
        header.withUnsafeBytes(emit)
        for piece in pieces {
            switch piece {
            case .old(let range): emit(UnsafeRawBufferPointer(rebasing: old[range]))
            case .new(let range): newEntries.withUnsafeBytes { emit(UnsafeRawBufferPointer(rebasing: $0[range])) }
            }
        }
        for (signature, payload) in extensions {
            var head = signature
            head.appendBigEndian(UInt32(payload.count))
            head.withUnsafeBytes(emit)
            payload.withUnsafeBytes(emit)
        }
    }

    /// Replaces the written entries' stat data (the first 40 bytes of each, as `appendEntry`
    /// lays them out) with `stats`, in the updates' order.
    mutating func setStats(_ stats: [stat]) {
        var fields = [UInt8]()
        fields.reserveCapacity(40)
        for (offset, info) in zip(entryOffsets, stats) {
            fields.removeAll(keepingCapacity: true)
            Self.appendStat(info, to: &fields)
            newEntries.replaceSubrange(offset..<(offset + 40), with: fields)
        }
    }
}

/// Paths a new file must not clash with: its parent directories (as files) and the files
/// themselves (as directories of other entries). Filtered by length first (one table lookup per
/// entry, inlined into the walk over the index: a call per entry was 5.4M of the 133M
/// instructions of a put into a 100,000-record profile, bench row B2), then looked up in the
/// sorted updates. The updates are sorted, so a run of them in one directory is looked at once.
struct Clashes {
    /// The directories the updates change (their cache-tree nodes go invalid), the root included.
    private(set) var invalidated = Set<[UInt8]>([[]])
    /// Lengths at which an entry's name may be a directory some update writes a file under.
    private(set) var isDirectoryLength = [Bool](repeating: false, count: 4097)
    /// Lengths of the paths updates write files at (ascending).
    let upsertLengths: [Int]
    /// Lengths at which a name can clash at all: a directory length above, or longer than the
    /// shortest path an update writes a file at (it may be a file below that file).
    private var mayClashAtLength = [Bool](repeating: false, count: 4097)

    init(_ updates: [IndexPatch.Update]) {
        var isUpsertLength = [Bool](repeating: false, count: 4097)
        var lastInvalidated: ArraySlice<UInt8>?, lastDirectory: ArraySlice<UInt8>?
        for index in updates.indices {
            let path = updates[index].path, upsert = updates[index].file != nil
            if upsert && path.count <= 4096 { isUpsertLength[path.count] = true }
            guard let slash = path.lastIndex(of: 0x2F) else { continue }
            let parent = path[..<slash]
            if lastInvalidated != parent {
                for index in parent.indices where parent[index] == 0x2F { invalidated.insert(Array(parent[..<index])) }
                invalidated.insert(Array(parent))
                lastInvalidated = parent
            }
            if upsert && lastDirectory != parent {
                for index in parent.indices where parent[index] == 0x2F && index <= 4096 { isDirectoryLength[index] = true }
                if parent.count <= 4096 { isDirectoryLength[parent.count] = true }
                lastDirectory = parent
            }
        }
        upsertLengths = isUpsertLength.indices.filter { isUpsertLength[$0] }
        let shortestUpsert = upsertLengths.first ?? Int.max
        for length in mayClashAtLength.indices {
            mayClashAtLength[length] = isDirectoryLength[length] || length > shortestUpsert
        }
    }

    /// Whether an entry named `name` would clash with a file an update writes.
    @inline(__always)
    func clash(_ name: UnsafeRawBufferPointer, updates: [IndexPatch.Update]) -> Bool {
        guard name.count > 4096 || mayClashAtLength[name.count] else { return false }
        return clashAtLength(name, updates: updates)
    }

    /// `clash` for a name of a length that may clash.
    private func clashAtLength(_ name: UnsafeRawBufferPointer, updates: [IndexPatch.Update]) -> Bool {
        if name.count <= 4096, isDirectoryLength[name.count], IndexPlan.hasUpsert(under: name, in: updates) { return true }
        for length in upsertLengths where length < name.count && name[length] == 0x2F {
            if IndexPlan.hasUpsert(at: UnsafeRawBufferPointer(rebasing: name[..<length]), in: updates) { return true }
        }
        return false
    }
}
