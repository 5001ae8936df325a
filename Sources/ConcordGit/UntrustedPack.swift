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
    private let indexPath: String
    private let lock = NSLock()
    /// nil until first used (a remote holds a pack per push: most are never looked in); then
    /// the opened files, or nil inside when they are not a pack and a version 2 index.
    private var opened: Opened??

    private struct Opened {
        let descriptor: Int32
        /// Where the entries end (the pack's trailing checksum starts).
        let entriesEnd: Int
        let index: [UInt8]
        let count: Int
        let largeOffsets: Int
    }

    init(packPath: String, indexPath: String) {
        self.packPath = packPath
        self.indexPath = indexPath
    }

    deinit {
        if case .some(.some(let files)) = opened { close(files.descriptor) }
    }

    private var files: Opened? {
        lock.lock()
        defer { lock.unlock() }
        if let opened { return opened }
        let made = Self.openFiles(packPath: packPath, indexPath: indexPath)
        opened = .some(made)
        return made
    }

    private static func openFiles(packPath: String, indexPath: String) -> Opened? {
        guard let index = try? SourceObjects.smallFile(indexPath, limit: 1 << 30), index.count >= 8 + 1024 + 40,
              index.starts(with: [0xFF, 0x74, 0x4F, 0x63, 0, 0, 0, 2]) else { return nil }
        var previous = 0
        for bucket in 0..<256 {
            let total = bigEndian32(index, at: 8 + bucket * 4)
            guard total >= previous else { return nil }
            previous = total
        }
        let fixed = 8 + 1024 + previous * 28 + 40
        guard index.count >= fixed, (index.count - fixed) % 8 == 0 else { return nil }
        let descriptor = open(packPath, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size >= 32 else {
            close(descriptor)
            return nil
        }
        return Opened(descriptor: descriptor, entriesEnd: Int(info.st_size) - 20, index: index, count: previous,
                      largeOffsets: (index.count - fixed) / 8)
    }

    /// Where the entries end (the pack's trailing checksum starts); 0 when it cannot be read.
    fileprivate var entriesEnd: Int { files?.entriesEnd ?? 0 }

    /// Where the index says object `id` is in the pack, if it lists it.
    func offset(of id: ObjectID) -> Int? {
        guard let files else { return nil }
        let (index, count, largeOffsets, entriesEnd) = (files.index, files.count, files.largeOffsets, files.entriesEnd)
        let first = Int(id.firstByte)
        var low = first == 0 ? 0 : Self.bigEndian32(index, at: 8 + (first - 1) * 4)
        var high = Self.bigEndian32(index, at: 8 + first * 4)
        let ids = 8 + 1024
        while low < high {
            let middle = (low + high) / 2
            let candidate = index.withUnsafeBytes { ObjectID(raw: UnsafeRawBufferPointer(rebasing: $0[(ids + middle * 20)..<(ids + middle * 20 + 20)])) }
            if candidate == id {
                let offsets = ids + count * 24
                var offset = Self.bigEndian32(index, at: offsets + middle * 4)
                if offset & 0x8000_0000 != 0 {
                    let large = offset & 0x7FFF_FFFF
                    guard large < largeOffsets else { return nil }
                    let at = offsets + count * 4 + large * 8
                    offset = Self.bigEndian32(index, at: at) << 32 | Self.bigEndian32(index, at: at + 4)
                }
                return offset >= 12 && offset < entriesEnd ? offset : nil
            }
            if candidate < id { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    /// Reads `count` bytes at `offset` into `buffer` (which has room); false when the file is shorter.
    fileprivate func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
        guard let descriptor = files?.descriptor else { return false }
        var done = 0
        while done < buffer.count {
            let n = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    private static func bigEndian32(_ bytes: [UInt8], at offset: Int) -> Int {
        Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
    }
}

/// Reads objects of an `UntrustedPack` on one thread: a window of the pack's bytes (entries written
/// one after another are read with one `pread`) and one reused inflate stream.
final class UntrustedPackReader {
    let pack: UntrustedPack
    private var window = [UInt8]()
    private var windowStart = 0
    private let inflater: UnsafeMutablePointer<concord_inflater>?
    private static let windowBytes = 256 << 10

    init(_ pack: UntrustedPack) {
        self.pack = pack
        inflater = concord_inflater_new()
    }

    deinit { concord_inflater_free(inflater) }

    /// The object at `offset` if it is stored whole there as a well-formed `type` entry of at most
    /// `limit` bytes; `withStream`: with the zlib stream it was inflated from (exactly, up to its checksum).
    /// Throws when the entry says it is another type or too large (refused, as libgit2's reading
    /// would be); nil for anything else (a delta, a damaged or unusual entry), left to libgit2.
    func object(at offset: Int, type: ObjectType, id: ObjectID, limit: Int, withStream: Bool) throws -> StoredObject? {
        guard let inflater, fill(offset, through: min(pack.entriesEnd, offset + 16)) else { return nil }
        var at = offset - windowStart
        var byte = window[at]
        let entryType = (byte >> 4) & 7
        var size = Int(byte & 0x0F), shift = 4
        while byte & 0x80 != 0 {
            at += 1
            guard at < window.count, shift <= 56 else { return nil }
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
        let dataEnd = min(pack.entriesEnd, dataStart + size + size / 8 + 64)
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

    /// Makes the window hold the pack's bytes `start..<end`; false when the file is shorter.
    private func fill(_ start: Int, through end: Int) -> Bool {
        if start >= windowStart && end <= windowStart + window.count { return true }
        let length = max(end, min(pack.entriesEnd, start + Self.windowBytes)) - start
        guard length > 0 else { return false }
        var read = false
        window = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            read = pack.read(into: UnsafeMutableRawBufferPointer(buffer), at: start)
            initialized = read ? length : 0
        }
        windowStart = read ? start : 0
        return read
    }
}
