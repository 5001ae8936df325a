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
final class UntrustedPack: @unchecked Sendable {   // its files are opened once, under `lock`; shared by one fetch's readers
    private let packPath: String
    let indexPath: String
    private let lock = NSLock()
    /// nil until first used (a remote holds a pack per push: most are never looked in); then
    /// the opened files, or why they are not a usable pack and index.
    private var opened: Result<Opened, Unusable>?

    fileprivate struct Opened {
        let descriptor: Int32
        /// Where the entries end (the pack's trailing checksum starts).
        let entriesEnd: Int
        let index: [UInt8]
        let count: Int
        let largeOffsets: Int

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
    fileprivate var files: Opened? {
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

/// Reads objects of an `UntrustedPack` on one thread: a window of the pack's bytes (entries written
/// one after another are read with one `pread`) and one reused inflate stream.
final class UntrustedPackReader {
    let pack: UntrustedPack
    /// The pack's bytes `windowStart..<(windowStart + windowLength)`, at the start of `window`.
    private var window = [UInt8]()
    private var windowStart = 0
    private var windowLength = 0
    private let inflater: UnsafeMutablePointer<concord_inflater>?
    private static let windowBytes = 256 << 10

    /// The pack's opened files, asked for once (nil: not usable here): no lock taken per object read.
    private lazy var files: UntrustedPack.Opened? = pack.files

    init(_ pack: UntrustedPack) {
        self.pack = pack
        inflater = concord_inflater_new()
    }

    /// Where the pack's index says object `id` is, if it lists it.
    func offset(of id: ObjectID) -> Int? {
        files?.offset(of: id)
    }

    deinit { concord_inflater_free(inflater) }

    /// The object at `offset` if it is stored whole there as a well-formed `type` entry of at most
    /// `limit` bytes; `withStream`: with the zlib stream it was inflated from (exactly, up to its checksum).
    /// Throws when the entry says it is another type or too large (refused, as libgit2's reading
    /// would be); nil for anything else (a delta, a damaged or unusual entry), left to libgit2.
    func object(at offset: Int, type: ObjectType, id: ObjectID, limit: Int, withStream: Bool) throws -> StoredObject? {
        guard let inflater, let entriesEnd = files?.entriesEnd, fill(offset, through: min(entriesEnd, offset + 16)) else { return nil }
        var at = offset - windowStart
        var byte = window[at]
        let entryType = (byte >> 4) & 7
        var size = Int(byte & 0x0F), shift = 4
        while byte & 0x80 != 0 {
            at += 1
            guard at < windowLength, shift <= 56 else { return nil }
            byte = window[at]
            size |= Int(byte & 0x7F) << shift
            shift += 7
        }
        at += 1
        guard entryType != 6 && entryType != 7 else { return nil }   // a delta: libgit2 resolves it
        guard entryType == type.rawValue else { throw SourceObjects.refusal("object \(id) is not a \(type.name)") }
        guard size <= limit else { throw SourceObjects.refusal("object \(id) is \(size) bytes, over the \(limit)-byte limit") }
        // Room for what any deflater writes for `size` bytes, even one storing them uncompressed.
        let dataStart = windowStart + at
        let dataEnd = min(entriesEnd, dataStart + size + size / 8 + 64)
        guard dataStart < dataEnd, fill(dataStart, through: dataEnd) else { return nil }
        var inflated = true
        var consumed = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: size + 1) { buffer, initialized in
            let result = window.withUnsafeBufferPointer { source in
                concord_inflater_run(inflater, source.baseAddress! + (dataStart - windowStart), dataEnd - dataStart,
                                     buffer.baseAddress!, size, &consumed)
            }
            inflated = result == 0
            initialized = inflated ? size : 0
        }
        guard inflated else { return nil }
        let start = dataStart - windowStart
        return StoredObject(bytes: bytes, compressed: withStream ? Array(window[start..<(start + consumed)]) : nil)
    }

    /// Makes the window hold the pack's bytes `start..<end`; false when the file is shorter. The
    /// window's buffer is reused (a new one per fill was most of the time spent reading: fresh
    /// pages, faulted in one by one).
    private func fill(_ start: Int, through end: Int) -> Bool {
        if start >= windowStart && end <= windowStart + windowLength { return true }
        guard let files else { return false }
        let length = max(end, min(files.entriesEnd, start + Self.windowBytes)) - start
        guard length > 0 else { return false }
        if window.count < length { window = [UInt8](repeating: 0, count: max(length, Self.windowBytes)) }
        let read = window.withUnsafeMutableBytes { files.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<length]), at: start) }
        windowStart = read ? start : 0
        windowLength = read ? length : 0
        return read
    }
}
