import Crypto
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Patches git's index file (`.git/index`, versions 2 and 3) for a few paths, as `git add` would,
/// without turning each of its entries into an allocation.
///
/// A 100,000-record profile has an 8.8 MB index. libgit2 reads it into 100,000 entries, sorts,
/// and writes it back through SHA-1DC: ~80 ms for one changed file. Here the file is mapped,
/// walked once (entry lengths only, comparing paths with the sorted updates), and the new index
/// written as the unchanged runs straight from the mapping with the changed entries in between,
/// hashed as it is written. Locking follows git: `index.lock` created exclusively, then swapped
/// with `index` (or renamed over it where the file system cannot swap). The old file's checksum
/// is verified, as git does, unless it is the very file this code last wrote (same inode, size,
/// mtime and checksum, recorded in `.git/concord/index-stamp`).
///
/// A large index may end with 20 zero bytes instead of its SHA-1 (see `Checksum`).
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

    /// `damaged`: the file is not a readable index (truncated, wrong signature, wrong checksum,
    /// entries running past its end), as a crash of the machine can leave it: nothing was written.
    enum Outcome { case patched, unsupported, damaged }

    /// How the new index ends. Its SHA-1 covers the whole file: ~8 ms of every small sync or put
    /// in a 100,000-record profile (a 9.6 MB index), the one cost left that grows with the
    /// profile rather than the change. git's `index.skipHash` (2.40+, and on with
    /// `feature.manyFiles`) ends the index with 20 zero bytes instead, which git reads without
    /// checking (2.39 included, `git fsck` too). libgit2 1.5 refuses such an index, so before
    /// concord hands the index to libgit2 it restores the checksum (`restoreChecksum`).
    enum Checksum: Equatable {
        case written, skipped
        /// Skipped when the new index is larger than this many bytes.
        case skippedAbove(Int)

        func skips(size: Int) -> Bool {
            switch self {
            case .written: return false
            case .skipped: return true
            case .skippedAbove(let limit): return size > limit
            }
        }
    }

    static func apply(_ updates: [Update], indexPath: String, checksum policy: Checksum) throws -> Outcome {
        switch try prepare(sortedLatest(updates), indexPath: indexPath, checksum: policy) {
        case .prepared(let patch):
            try patch.finish()
            return .patched
        case .rejected(let outcome):
            return outcome
        }
    }

    enum Preparation {
        case prepared(Prepared)
        case rejected(Outcome)
    }

    /// Plans the patch of `sorted` (updates in index order, each path once) under git's
    /// `index.lock`, without writing it yet. A bulk write plans it while its files are still
    /// being written, with placeholder stat data that `Prepared.finish(stats:)` then fills in.
    static func prepare(_ sorted: [Update], indexPath: String, checksum policy: Checksum) throws -> Preparation {
        let lockPath = indexPath + ".lock"
        let lock = try takeLock(lockPath)
        var handedOver = false
        defer {
            if !handedOver {
                close(lock)
                unlink(lockPath)
            }
        }
        let stampPath = String(indexPath.dropLast("index".count)) + "concord/index-stamp"

        // No index yet (a new clone): patch an empty one, as git would create it.
        let old: MappedFile
        switch load(indexPath) {
        case .found(let mapped): old = mapped
        case .missing: old = MappedFile(emptyIndex: ())
        case .rejected(let outcome): return .rejected(outcome)
        }
        let trusted = IndexStamp.read(stampPath).map { $0.matches(old.info, checksum: old.bytes.suffix(20)) } ?? false
        let plan: IndexPlan
        do {
            plan = try IndexPlan(old.bytes, updates: sorted, verifyChecksum: !trusted)
        } catch {
            return .rejected(error.outcome)
        }
        handedOver = true
        return .prepared(Prepared(lock: lock, lockPath: lockPath, indexPath: indexPath, stampPath: stampPath,
                                  old: old, plan: plan, policy: policy))
    }

    /// A planned index patch holding `index.lock`; released unfinished, it writes nothing and
    /// releases the lock.
    final class Prepared {
        private let lock: Int32
        private let lockPath: String, indexPath: String, stampPath: String
        private let old: MappedFile
        private var plan: IndexPlan
        private let policy: Checksum
        private var renamed = false

        fileprivate init(lock: Int32, lockPath: String, indexPath: String, stampPath: String, old: MappedFile,
                         plan: IndexPlan, policy: Checksum) {
            self.lock = lock
            self.lockPath = lockPath
            self.indexPath = indexPath
            self.stampPath = stampPath
            self.old = old
            self.plan = plan
            self.policy = policy
        }

        deinit {
            close(lock)
            if !renamed { unlink(lockPath) }
        }

        /// How many entries the patch writes (the updates that are not removals).
        var writtenEntries: Int { plan.entryOffsets.count }

        /// Writes the index and puts it in place. `stats`, when given, replace the planned entries'
        /// stat data, in the order of the updates (one per update that is not a removal).
        func finish(stats: [stat]? = nil) throws {
            if let stats {
                guard stats.count == plan.entryOffsets.count else {
                    throw GitError(function: "index write", code: .other(-1),
                                   message: "internal error: \(stats.count) files' stat data for \(plan.entryOffsets.count) index entries")
                }
                plan.setStats(stats)
            }
            let checksum = try IndexPatch.write(plan, from: old.bytes, to: lock, lockPath: lockPath,
                                                skippingChecksum: policy.skips(size: plan.size(from: old.bytes) + 20))
            var info = stat()
            guard fstat(lock, &info) == 0 else {
                throw GitError(function: "index write", code: .other(-1), message: "cannot write \(lockPath): \(String(cString: strerror(errno)))")
            }
            try IndexPatch.install(lockPath, as: indexPath)
            renamed = true
            IndexStamp(info, checksum: checksum).write(stampPath)
        }
    }

    /// Writes the planned index to `lock`, then its checksum (or 20 zero bytes); returns what
    /// ends the file.
    fileprivate static func write(_ plan: IndexPlan, from old: UnsafeRawBufferPointer, to lock: Int32, lockPath: String,
                              skippingChecksum: Bool) throws -> [UInt8] {
        // Hash and write side by side: for a large index each is several milliseconds of the sync.
        let source = UncheckedBox(old), digest = UncheckedBox([UInt8](repeating: 0, count: 20)), failed = UncheckedBox(false)
        let parallel = !skippingChecksum && old.count > 1 << 20
        DispatchQueue.concurrentPerform(iterations: parallel ? 2 : 1) { task in
            if task == 0 && !skippingChecksum {
                var hasher = Insecure.SHA1()
                plan.write(from: source.value) { hasher.update(bufferPointer: $0) }
                digest.value = Array(hasher.finalize())
            }
            if task == 1 || !parallel {
                var writeFailed = false
                plan.write(from: source.value) { bytes in
                    if !writeFailed && !bytes.isEmpty { writeFailed = !FileIO.writeAll(lock, bytes) }
                }
                failed.value = writeFailed
            }
        }
        let trailer = digest.value
        guard !failed.value, trailer.withUnsafeBytes({ FileIO.writeAll(lock, $0) }) else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot write \(lockPath): \(String(cString: strerror(errno)))")
        }
        return trailer
    }

    /// Puts the written `index.lock` in place of the index. Renaming over an existing file makes
    /// ext4 (auto_da_alloc) push the new file to the disk before rename returns: ~13 ms for a
    /// 9.6 MB index, the largest cost of a small sync in a 100,000-record profile. Exchanging the
    /// two names does not. The old index then sits under the lock's name, so git's lock is held
    /// until it is removed; a crash in between leaves a stale `index.lock`, which the next
    /// concord command clears (ProfileLock).
    fileprivate static func install(_ lockPath: String, as indexPath: String) throws {
        if FileIO.exchange(lockPath, indexPath) {
            unlink(lockPath)
            return
        }
        guard rename(lockPath, indexPath) == 0 else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot rename \(lockPath): \(String(cString: strerror(errno)))")
        }
    }

    /// Gives an index that ends with a null trailer (`Checksum.skipped`, or git's
    /// `index.skipHash`) its real SHA-1, under `index.lock`, so libgit2 1.5 can read it. Any
    /// other index, or none, is left alone; so is one this code cannot read through (a crash can
    /// leave zeros at the end of a file), which must not be passed off as sound. An index of a
    /// version it does not read (4) is taken as git wrote it.
    static func restoreChecksum(indexPath: String) throws {
        guard endsWithNullTrailer(indexPath) else { return }
        // Under the lock, so a git process cannot swap in a new index while this one is copied.
        let lockPath = indexPath + ".lock"
        let lock = try takeLock(lockPath)
        var installed = false
        defer {
            close(lock)
            if !installed { unlink(lockPath) }
        }
        guard case .found(let old) = load(indexPath), !old.bytes.suffix(20).contains(where: { $0 != 0 }) else { return }
        do {
            _ = try IndexPlan(old.bytes, updates: [], verifyChecksum: true)
        } catch {
            let version = IndexPlan.uint32(old.bytes, 4)
            if error == .damaged || version == 2 || version == 3 { return }
        }
        let body = UnsafeRawBufferPointer(rebasing: old.bytes.dropLast(20))
        var hasher = Insecure.SHA1()
        hasher.update(bufferPointer: body)
        let trailer = Array(hasher.finalize())
        guard FileIO.writeAll(lock, body), trailer.withUnsafeBytes({ FileIO.writeAll(lock, $0) }) else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot write \(lockPath): \(String(cString: strerror(errno)))")
        }
        try install(lockPath, as: indexPath)
        installed = true
    }

    /// Whether the index file's last 20 bytes are zeros: a cheap look before taking the lock.
    private static func endsWithNullTrailer(_ indexPath: String) -> Bool {
        let fd = open(indexPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 32 else { return false }
        var trailer = [UInt8](repeating: 0xFF, count: 20)
        let read = trailer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 20, off_t(info.st_size) - 20) }
        return read == 20 && !trailer.contains { $0 != 0 }
    }
}

extension IndexPatch {
    /// Creates git's `index.lock` exclusively and returns it open for writing.
    static func takeLock(_ lockPath: String) throws -> Int32 {
        let lock = open(lockPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard lock >= 0 else {
            if errno == EEXIST {
                throw GitError(function: "index lock", code: .locked,
                               message: "\(lockPath) exists: another git process is running, or one crashed — remove the file if none is")
            }
            throw GitError(function: "index lock", code: .other(-1), message: "cannot create \(lockPath): \(String(cString: strerror(errno)))")
        }
        return lock
    }

    /// What `apply` would find the index to be, without writing anything: `.patched` for an
    /// index it can patch, `.damaged` or `.unsupported` as `apply` reports them.
    static func inspect(indexPath: String) -> Outcome {
        switch load(indexPath) {
        case .missing: return .patched
        case .rejected(let outcome): return outcome
        case .found(let mapped):
            do {
                _ = try IndexPlan(mapped.bytes, updates: [], verifyChecksum: true)
                return .patched
            } catch {
                return error.outcome
            }
        }
    }

    private enum Loaded {
        case found(MappedFile), missing, rejected(Outcome)
    }

    /// The index file mapped, or why not: missing, damaged (shorter than a header and a
    /// checksum), or unreadable (`.unsupported`: libgit2 then reports why).
    private static func load(_ indexPath: String) -> Loaded {
        var existing = stat()
        if stat(indexPath, &existing) != 0 { return errno == ENOENT ? .missing : .rejected(.unsupported) }
        if existing.st_size < 32 { return .rejected(.damaged) }
        return MappedFile(indexPath).map(Loaded.found) ?? .rejected(.unsupported)
    }

    /// The paths' bytes, and their positions in index order (by bytes; equal paths in their
    /// given order).
    static func order(_ paths: [String]) -> (positions: [Int], bytes: [[UInt8]]) {
        let bytes = paths.map { Array($0.utf8) }
        return (positions(inIndexOrder: bytes), bytes)
    }

    /// The positions of `paths` in index order: by bytes, equal paths in their given order.
    private static func positions(inIndexOrder paths: [[UInt8]]) -> [Int] {
        var order = Array(paths.indices)
        order.sort { first, second in
            let order = paths[first].withUnsafeBytes { IndexPlan.compare(paths[second], $0) }
            return order != 0 ? order > 0 : first < second
        }
        return order
    }

    /// The updates in index order, the last one of each path winning.
    static func sortedLatest(_ updates: [Update]) -> [Update] {
        let alreadySorted = updates.indices.dropFirst().allSatisfy { index in
            updates[index].path.withUnsafeBytes { IndexPlan.compare(updates[index - 1].path, $0) < 0 }
        }
        if alreadySorted { return updates }
        let order = positions(inIndexOrder: updates.map(\.path))
        var result = [Update]()
        result.reserveCapacity(updates.count)
        for index in order {
            if let last = result.last, last.path == updates[index].path {
                result[result.count - 1] = updates[index]
            } else {
                result.append(updates[index])
            }
        }
        return result
    }
}

/// A value handed to concurrent workers that each touch it at a different time (the hasher and
/// the writer read the same immutable mapping; each result is written by one worker only).
private final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A file mapped read-only; unmapped when released.
private final class MappedFile {
    let bytes: UnsafeRawBufferPointer
    let info: stat

    init?(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 32,
              let base = mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0), base != MAP_FAILED
        else { return nil }
        bytes = UnsafeRawBufferPointer(start: base, count: Int(info.st_size))
        self.info = info
        mapped = true
    }

    private let mapped: Bool

    /// An empty version 2 index: header, no entries, checksum.
    init(emptyIndex: Void) {
        var header: [UInt8] = Array("DIRC".utf8) + [0, 0, 0, 2, 0, 0, 0, 0]
        header += Array(Insecure.SHA1.hash(data: header))
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: header.count, alignment: 1)
        copy.copyBytes(from: header)
        bytes = UnsafeRawBufferPointer(copy)
        info = stat()
        mapped = false
    }

    deinit {
        if mapped { munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count) }
        else { UnsafeMutableRawBufferPointer(mutating: bytes).deallocate() }
    }
}

/// What identifies the index file this code last wrote.
private struct IndexStamp {
    let inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int
    let checksum: [UInt8]

    init(_ info: stat, checksum: [UInt8]) {
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
        self.checksum = checksum
    }

    func matches(_ info: stat, checksum trailer: UnsafeRawBufferPointer.SubSequence) -> Bool {
        inode == UInt64(info.st_ino) && size == Int64(info.st_size) && seconds == Int(info.st_mtim.tv_sec)
            && nanoseconds == Int(info.st_mtim.tv_nsec) && trailer.elementsEqual(checksum)
    }

    static func read(_ path: String) -> IndexStamp? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count == 5, let inode = UInt64(fields[0]), let size = Int64(fields[1]), let seconds = Int(fields[2]),
              let nanoseconds = Int(fields[3]), let checksum = ObjectID(hex: String(fields[4].prefix(40))) else { return nil }
        var info = stat()
        info.st_ino = .init(inode)
        info.st_size = .init(size)
        info.st_mtim.tv_sec = .init(seconds)
        info.st_mtim.tv_nsec = .init(nanoseconds)
        return IndexStamp(info, checksum: checksum.bytes)
    }

    /// Best effort: without a stamp the next patch simply verifies the checksum.
    func write(_ path: String) {
        let text = "\(inode) \(size) \(seconds) \(nanoseconds) \(ObjectID(bytes: checksum).hex)\n"
        try? FileIO.write(Array(text.utf8), to: path, makingParents: false)
    }
}

/// How the new index is made from the old one: runs of old bytes and new entries, in order.
private struct IndexPlan {
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
        // Paths a new file must not clash with: its parent directories (as files) and the files
        // themselves (as directories of other entries). Filtered by length first (a table lookup
        // per entry), then looked up in the sorted updates. The updates are sorted, so a run of
        // them in one directory is looked at once.
        var invalidated = Set<[UInt8]>([[]])
        var isDirectoryLength = [Bool](repeating: false, count: 4097), isUpsertLength = isDirectoryLength
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
        let upsertLengths = isUpsertLength.indices.filter { isUpsertLength[$0] }

        newEntries.reserveCapacity(updates.reduce(0) { $0 + (($1.path.count + 70) & ~7) })
        let entryCount = Int(Self.uint32(bytes, 8))
        var pending = updates[...]
        var namelessEntries = false   // damage, unless a split index's "link" extension follows
        // Without a checksum to verify, damage shows as entries out of git's order (name, then stage).
        let checkOrder = verifyChecksum && nullTrailer
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
            if nameLength <= 4096, isDirectoryLength[nameLength], Self.hasUpsert(under: name, in: updates) { throw .unsupported }
            for length in upsertLengths where length < nameLength && name[length] == 0x2F {
                if Self.hasUpsert(at: UnsafeRawBufferPointer(rebasing: name[..<length]), in: updates) { throw .unsupported }
            }
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

        while offset < body {
            guard offset + 8 <= body else { throw .damaged }
            let signature = Array(bytes[offset..<(offset + 4)])
            let length = Int(Self.uint32(bytes, offset + 4))
            let data = (offset + 8)..<(offset + 8 + length)
            guard data.upperBound <= body else { throw .damaged }
            guard signature.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .damaged }
            let optional = signature[0] >= UInt8(ascii: "A") && signature[0] <= UInt8(ascii: "Z")
            if !optional { throw .unsupported }   // e.g. a split index ("link") or sparse directories ("sdir")
            // Keep the cache tree (invalidated on the changed paths) and resolve-undo data; drop
            // other caches (untracked cache, fsmonitor, offset tables), which git rebuilds.
            if signature.elementsEqual("TREE".utf8) {
                if let payload = CacheTree.invalidating(invalidated, in: Array(bytes[data])[...]) {
                    extensions.append((signature, payload))
                }
            } else if signature.elementsEqual("REUC".utf8) {
                extensions.append((signature, Array(bytes[data])))
            }
            offset = data.upperBound
        }
        if namelessEntries { throw .damaged }
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

    /// The 40 bytes of stat data an entry starts with: ctime, mtime, dev, ino, mode, uid, gid, size.
    static func appendStat(_ info: stat, to out: inout [UInt8]) {
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_ctim.tv_sec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_mtim.tv_sec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_dev))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_ino))
        out.appendBigEndian(0o100644)
        out.appendBigEndian(info.st_uid)
        out.appendBigEndian(info.st_gid)
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_size))
    }

    /// A version 2 entry (no extended flags, stage 0), padded with NULs to a multiple of 8 bytes.
    static func appendEntry(path: [UInt8], info: stat, blob: ObjectID, to out: inout [UInt8]) {
        let start = out.count
        appendStat(info, to: &out)
        out.append(contentsOf: blob.bytes)
        let flags = min(path.count, 0xFFF)
        out.append(UInt8(flags >> 8))
        out.append(UInt8(flags & 0xFF))
        out.append(contentsOf: path)
        let length = (62 + path.count + 8) & ~7
        out.append(contentsOf: repeatElement(0, count: start + length - out.count))
    }

    /// The first of the sorted `updates` whose path is not below `key` in byte order.
    static func lowerBound(_ key: UnsafeRawBufferPointer, in updates: [IndexPatch.Update]) -> Int {
        var low = 0, high = updates.count
        while low < high {
            let middle = (low + high) / 2
            if compare(updates[middle].path, key) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether the sorted `updates` write a file at exactly `path`.
    static func hasUpsert(at path: UnsafeRawBufferPointer, in updates: [IndexPatch.Update]) -> Bool {
        let index = lowerBound(path, in: updates)
        return index < updates.count && compare(updates[index].path, path) == 0 && updates[index].file != nil
    }

    /// Whether the sorted `updates` write a file below directory `directory`.
    static func hasUpsert(under directory: UnsafeRawBufferPointer, in updates: [IndexPatch.Update]) -> Bool {
        let prefix = Array(directory) + [0x2F]
        return prefix.withUnsafeBytes { prefix in
            var index = lowerBound(prefix, in: updates)
            while index < updates.count, updates[index].path.starts(with: prefix) {
                if updates[index].file != nil { return true }
                index += 1
            }
            return false
        }
    }

    @inline(__always)
    static func compare(_ path: [UInt8], _ name: UnsafeRawBufferPointer) -> Int {
        path.withUnsafeBytes { compare($0, name) }
    }

    /// Byte order of two paths (git's index order for stage-0 entries), with `memcmp`.
    @inline(__always)
    static func compare(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
        let common = min(first.count, second.count)
        let order = common > 0 ? memcmp(first.baseAddress!, second.baseAddress!, common) : 0
        return order != 0 ? Int(order) : first.count - second.count
    }

    static func uint32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
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
