import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Patches git's index file (`.git/index`, versions 2 and 3) for a few paths, as `git add` would,
/// without turning each of its entries into an allocation.
///
/// A 100,000-record profile has an 8.8 MB index. libgit2 reads it into 100,000 entries, sorts,
/// and writes it back through SHA-1DC: ~80 ms for one changed file. Here the file is read once,
/// its entries located by offset, the changed entries spliced in between unchanged runs of bytes,
/// and one SHA-1 computed over the result. Locking follows git: `index.lock` created exclusively,
/// renamed over `index`.
///
/// Anything this does not handle — no index yet, version 4 (prefix-compressed paths), a split
/// index, an unknown required extension, a file/directory clash on a changed path — is reported
/// as `.unsupported` with nothing written, and the caller uses libgit2.
enum IndexPatch {
    /// One path's new state: the entry's stat data and blob, or nil to remove the path.
    struct Update {
        let path: [UInt8]
        let file: (info: stat, blob: ObjectID)?
    }

    enum Outcome { case patched, unsupported }

    static func apply(_ updates: [Update], indexPath: String) throws -> Outcome {
        let lockPath = indexPath + ".lock"
        let lock = open(lockPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard lock >= 0 else {
            if errno == EEXIST {
                throw GitError(function: "index lock", code: .locked,
                               message: "\(lockPath) exists: another git process is running, or one crashed — remove the file if none is")
            }
            throw GitError(function: "index lock", code: .other(-1), message: "cannot create \(lockPath): \(String(cString: strerror(errno)))")
        }
        var renamed = false
        defer {
            close(lock)
            if !renamed { unlink(lockPath) }
        }
        var latest = [[UInt8]: Update]()
        for update in updates { latest[update.path] = update }
        let sorted = latest.values.sorted { $0.path.lexicographicallyPrecedes($1.path) }
        guard let old = readFile(indexPath), let index = ParsedIndex(old), let patched = index.applying(sorted) else {
            return .unsupported
        }
        guard writeAll(lock, patched) else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot write \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard rename(lockPath, indexPath) == 0 else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot rename \(lockPath): \(String(cString: strerror(errno)))")
        }
        renamed = true
        return .patched
    }

    private static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        let ok = bytes.withUnsafeMutableBytes { buffer -> Bool in
            while done < size {
                let n = read(fd, buffer.baseAddress! + done, size - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
        return ok ? bytes : nil
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer -> Bool in
            var done = 0
            while done < buffer.count {
                let n = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
    }
}

/// An index file's bytes with the offsets of its entries and extensions.
private struct ParsedIndex {
    struct Entry {
        let start: Int
        let end: Int
        let nameStart: Int
        let nameEnd: Int
        let stage: Int
    }

    let bytes: [UInt8]
    let version: UInt32
    let entries: [Entry]
    /// The extensions to keep, as (signature, data range); optional caches are dropped.
    let extensions: [(signature: [UInt8], data: Range<Int>)]

    /// nil when the bytes are not an index this patches (or are damaged: the checksum must match).
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 32, bytes[0..<4].elementsEqual("DIRC".utf8) else { return nil }
        let version = Self.uint32(bytes, 4)
        guard version == 2 || version == 3 else { return nil }
        let body = bytes.count - 20
        guard Array(Insecure.SHA1.hash(data: bytes[0..<body])).elementsEqual(bytes[body...]) else { return nil }
        let count = Int(Self.uint32(bytes, 8))
        var entries = [Entry]()
        entries.reserveCapacity(count)
        var offset = 12
        for _ in 0..<count {
            guard offset + 62 <= body else { return nil }
            let flags = Int(bytes[offset + 60]) << 8 | Int(bytes[offset + 61])
            let extended = flags & 0x4000 != 0
            if extended && version < 3 { return nil }
            let nameStart = offset + (extended ? 64 : 62)
            var nameLength = flags & 0xFFF
            if nameLength == 0xFFF {
                guard let nul = bytes[nameStart..<body].firstIndex(of: 0) else { return nil }
                nameLength = nul - nameStart
            }
            let end = offset + ((nameStart - offset + nameLength + 8) & ~7)
            guard end <= body else { return nil }
            entries.append(Entry(start: offset, end: end, nameStart: nameStart, nameEnd: nameStart + nameLength,
                                 stage: flags >> 12 & 3))
            offset = end
        }
        var extensions = [(signature: [UInt8], data: Range<Int>)]()
        while offset < body {
            guard offset + 8 <= body else { return nil }
            let signature = Array(bytes[offset..<(offset + 4)])
            let length = Int(Self.uint32(bytes, offset + 4))
            let data = (offset + 8)..<(offset + 8 + length)
            guard data.upperBound <= body else { return nil }
            let optional = signature[0] >= UInt8(ascii: "A") && signature[0] <= UInt8(ascii: "Z")
            if !optional { return nil }   // e.g. a split index ("link") or sparse directories ("sdir")
            // Keep the cache tree (invalidated below) and resolve-undo data; drop other caches
            // (untracked cache, fsmonitor, offset tables), which git rebuilds when it wants them.
            if signature.elementsEqual("TREE".utf8) || signature.elementsEqual("REUC".utf8) {
                extensions.append((signature, data))
            }
            offset = data.upperBound
        }
        self.bytes = bytes
        self.version = version
        self.entries = entries
        self.extensions = extensions
    }

    func name(_ entry: Entry) -> ArraySlice<UInt8> { bytes[entry.nameStart..<entry.nameEnd] }

    /// The first entry whose path sorts at or after `path` (stage 0).
    func lowerBound(_ path: ArraySlice<UInt8>) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if name(entries[middle]).lexicographicallyPrecedes(path) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    func contains(_ path: ArraySlice<UInt8>) -> Bool {
        let position = lowerBound(path)
        return position < entries.count && name(entries[position]).elementsEqual(path)
    }

    /// The new index bytes, or nil when an update would clash a file with a directory.
    func applying(_ updates: [IndexPatch.Update]) -> [UInt8]? {
        // Per update: the run of existing entries with that path (all stages) it replaces.
        var replaced = [Range<Int>]()
        replaced.reserveCapacity(updates.count)
        var invalidated = Set<[UInt8]>([[]])
        for update in updates {
            let path = update.path[...]
            let start = lowerBound(path)
            var end = start
            while end < entries.count && name(entries[end]).elementsEqual(path) { end += 1 }
            replaced.append(start..<end)
            var slash = path.startIndex
            while let next = path[slash...].firstIndex(of: 0x2F) {
                let directory = path[..<next]
                invalidated.insert(Array(directory))
                if update.file != nil && contains(directory) { return nil }
                slash = next + 1
            }
            if update.file != nil {
                let below = Array(path) + [0x2F]
                let position = lowerBound(below[...])
                if position < entries.count && name(entries[position]).starts(with: below) { return nil }
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + updates.count * 128)
        out += bytes[0..<12]
        var count = 0
        var copied = 0
        func copy(upTo limit: Int) {
            guard limit > copied else { return }
            out += bytes[entries[copied].start..<entries[limit - 1].end]
            count += limit - copied
            copied = limit
        }
        for (update, range) in zip(updates, replaced) {
            copy(upTo: range.lowerBound)
            copied = max(copied, range.upperBound)
            if let file = update.file {
                Self.appendEntry(path: update.path, info: file.info, blob: file.blob, to: &out)
                count += 1
            }
        }
        copy(upTo: entries.count)
        Self.putUInt32(UInt32(count), at: 8, in: &out)
        for (signature, data) in extensions {
            let payload = signature.elementsEqual("TREE".utf8)
                ? CacheTree.invalidating(invalidated, in: bytes[data]) : Array(bytes[data])
            guard let payload else { continue }
            out += signature
            Self.appendUInt32(UInt32(payload.count), to: &out)
            out += payload
        }
        out += Array(Insecure.SHA1.hash(data: out))
        return out
    }

    /// A version 2 entry (no extended flags, stage 0), padded with NULs to a multiple of 8 bytes.
    static func appendEntry(path: [UInt8], info: stat, blob: ObjectID, to out: inout [UInt8]) {
        let fields: [UInt32] = [
            UInt32(truncatingIfNeeded: info.st_ctim.tv_sec), UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec),
            UInt32(truncatingIfNeeded: info.st_mtim.tv_sec), UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec),
            UInt32(truncatingIfNeeded: info.st_dev), UInt32(truncatingIfNeeded: info.st_ino),
            0o100644, info.st_uid, info.st_gid, UInt32(truncatingIfNeeded: info.st_size),
        ]
        let start = out.count
        for field in fields { appendUInt32(field, to: &out) }
        out += blob.bytes
        let flags = min(path.count, 0xFFF)
        out += [UInt8(flags >> 8), UInt8(flags & 0xFF)]
        out += path
        let length = (62 + path.count + 8) & ~7
        out += repeatElement(0, count: start + length - out.count)
    }

    static func uint32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func appendUInt32(_ value: UInt32, to out: inout [UInt8]) {
        out += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func putUInt32(_ value: UInt32, at offset: Int, in out: inout [UInt8]) {
        out[offset] = UInt8(value >> 24)
        out[offset + 1] = UInt8(value >> 16 & 0xFF)
        out[offset + 2] = UInt8(value >> 8 & 0xFF)
        out[offset + 3] = UInt8(value & 0xFF)
    }
}

/// The index's cache-tree extension ("TREE"): per directory, in pre-order, `name NUL count SP
/// subtrees LF` then the tree id when `count` ≥ 0. A changed directory is marked invalid (`-1`,
/// no id), as git's `cache_tree_invalidate_path` does; git recomputes it on its next commit.
private enum CacheTree {
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
