// This file touches zlib (through CShims).
internal import CShims
import Foundation

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
        guard let (entryType, size, at) = UntrustedPack.entryHeader(window, at: offset - windowStart, end: windowLength) else { return nil }
        guard entryType != 6 && entryType != 7 else { return nil }   // a delta: libgit2 resolves it
        guard entryType == type.rawValue else { throw WrongObjectType(id: id, expected: type) }
        guard size <= limit else { throw OversizedObject(id: id, size: size, limit: limit) }
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
        // As large as this pack needs, not a whole window: a path remote pushed to 300 times holds
        // 300 small packs, one reader each, and zeroing 256 KiB for each was most of copying a
        // merge history's commits (B13).
        if window.count < length { window = [UInt8](repeating: 0, count: length) }
        let read = window.withUnsafeMutableBytes { files.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<length]), at: start) }
        windowStart = read ? start : 0
        windowLength = read ? length : 0
        return read
    }
}
