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
/// A 100,000-record profile has a 9.2 MB index. libgit2 reads it into 100,000 entries, sorts,
/// and writes it back through SHA-1DC: bench row "G3 index update of one put at 100k" (commit
/// e9b7ede, 5 runs on 2 shared cores) measured 201 ms for one changed file through
/// `git_index_read`/`git_index_add`/`git_index_write` against 18.6 ms here, most of a put (52 ms);
/// at 10k records 17.2 vs 2.3 ms (row "G3 … at 10k"). Here the file is mapped,
/// walked once (entry lengths only, comparing paths with the sorted updates), and the new index
/// written as the unchanged runs straight from the mapping with the changed entries in between,
/// hashed as it is written. Locking follows git: `index.lock` is created exclusively and held
/// meanwhile (`IndexLock`, which also says where the new index is written and how it is put in place). The old file's checksum
/// is verified, as git does, unless it is the very file this code last wrote (same inode, size,
/// mtime and checksum, recorded in `.git/concord/index-stamp`).
///
/// A large index may end with 20 zero bytes instead of its SHA-1 (see `Checksum`).
///
/// Anything this does not handle — no index yet, version 4 (prefix-compressed paths), a split
/// index, an unknown required extension, a file/directory clash on a changed path — is reported
/// as `.unsupported` with nothing written, and the caller uses libgit2.
package enum IndexPatch {
    /// One path's new state: the entry's stat data and blob, or nil to remove the path.
    package struct Update {
        /// The path's UTF-8 bytes (`TreePath.utf8`).
        package let path: [UInt8]
        package let file: (info: stat, blob: ObjectID)?

        /// `bytes` are `path`'s UTF-8, when the caller has them already (`order` makes them).
        package init(path: TreePath, bytes: [UInt8]? = nil, file: (info: stat, blob: ObjectID)?) {
            self.path = bytes ?? Array(path.utf8)
            self.file = file
        }
    }

    /// `damaged`: the file is not a readable index (truncated, wrong signature, wrong checksum,
    /// entries running past its end), as a crash of the machine can leave it: nothing was written.
    package enum Outcome { case patched, unsupported, damaged }

    /// How the new index ends. Its SHA-1 covers the whole file: ~8 ms of every small sync or put
    /// in a 100,000-record profile (a 9.6 MB index), the one cost left that grows with the
    /// profile rather than the change. git's `index.skipHash` (2.40+, and on with
    /// `feature.manyFiles`) ends the index with 20 zero bytes instead, which git reads without
    /// checking (2.39 included, `git fsck` too). libgit2 1.5 refuses such an index, so before
    /// concord hands the index to libgit2 it restores the checksum (`restoreChecksum`).
    package enum Checksum: Equatable {
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

    /// `apply(_:under:checksum:)` taking `index.lock` for itself, failing at once if it is held.
    package static func apply(_ updates: [Update], indexPath: String, checksum policy: Checksum) throws -> Outcome {
        let lock = try IndexLock(indexPath: indexPath, timeout: 0)
        return try apply(updates, under: lock, checksum: policy)
    }

    /// Patches the index `lock` holds (`lock.indexPath`) with `updates`.
    package static func apply(_ updates: [Update], under lock: IndexLock, checksum policy: Checksum) throws -> Outcome {
        switch try prepare(sortedLatest(updates), under: lock, checksum: policy) {
        case .prepared(let patch):
            try patch.finish()
            return .patched
        case .rejected(let outcome):
            return outcome
        }
    }

    package enum Preparation {
        case prepared(Prepared)
        case rejected(Outcome)
    }

    /// Plans the patch of `sorted` (updates in index order, each path once) of the index `lock`
    /// holds, without writing it yet. A bulk write plans it while its files are still being
    /// written, with placeholder stat data that `Prepared.finish(stats:)` then fills in.
    package static func prepare(_ sorted: [Update], under lock: IndexLock, checksum policy: Checksum) throws -> Preparation {
        let indexPath = lock.indexPath
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
        return .prepared(Prepared(lock: lock, stampPath: stampPath, old: old, plan: plan, policy: policy))
    }

    /// A planned patch of the index its `IndexLock` holds; released unfinished, it writes nothing.
    package final class Prepared {
        private let lock: IndexLock
        private let stampPath: String
        private let old: MappedFile
        private var plan: IndexPlan
        private let policy: Checksum

        fileprivate init(lock: IndexLock, stampPath: String, old: MappedFile, plan: IndexPlan, policy: Checksum) {
            (self.lock, self.stampPath, self.old, self.plan, self.policy) = (lock, stampPath, old, plan, policy)
        }

        /// How many entries the patch writes (the updates that are not removals).
        var writtenEntries: Int { plan.entryOffsets.count }

        /// Writes the index to a scratch file and puts it in place, the lock still held. `stats`,
        /// when given, replace the planned entries' stat data, in the order of the updates (one
        /// per update that is not a removal).
        package func finish(stats: [stat]? = nil) throws {
            if let stats {
                guard stats.count == plan.entryOffsets.count else {
                    throw GitError(function: "index write", code: .other(-1),
                                   message: "internal error: \(stats.count) files' stat data for \(plan.entryOffsets.count) index entries")
                }
                plan.setStats(stats)
            }
            let scratch = try lock.createScratch()
            var installed = false
            defer {
                close(scratch.descriptor)
                if !installed { unlink(scratch.path) }
            }
            let checksum = try IndexPatch.write(plan, from: old.bytes, to: scratch.descriptor, path: scratch.path,
                                                skippingChecksum: policy.skips(size: plan.size(from: old.bytes) + 20))
            var info = stat()
            guard fstat(scratch.descriptor, &info) == 0 else {
                throw GitError(function: "index write", code: .other(-1), message: "cannot write \(scratch.path): \(String(cString: strerror(errno)))")
            }
            try lock.install(scratch.path)
            installed = true
            IndexStamp(info, checksum: checksum).write(stampPath)
        }
    }

    /// Writes the planned index to `file` (open at `path`), then its checksum (or 20 zero bytes);
    /// returns what ends the file.
    fileprivate static func write(_ plan: IndexPlan, from old: UnsafeRawBufferPointer, to file: Int32, path: String,
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
                    if !writeFailed && !bytes.isEmpty { writeFailed = !FileIO.writeAll(file, bytes) }
                }
                failed.value = writeFailed
            }
        }
        let trailer = digest.value
        guard !failed.value, trailer.withUnsafeBytes({ FileIO.writeAll(file, $0) }) else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return trailer
    }

    /// Gives an index that ends with a null trailer (`Checksum.skipped`, or git's
    /// `index.skipHash`) its real SHA-1, under `lock`, so libgit2 1.5 can read it. Any other index,
    /// or none, is left alone; so is one this code cannot read through (a crash can leave zeros at
    /// the end of a file), which must not be passed off as sound. An index of a version it does
    /// not read (4) is taken as git wrote it. `lock` is taken only when the index needs it
    /// (`indexPath`, while no lock is held yet).
    package static func restoreChecksum(indexPath: String, lock takeLock: () throws -> IndexLock) throws {
        guard endsWithNullTrailer(indexPath) else { return }
        // Under the lock, so a git process cannot swap in a new index while this one is copied.
        let lock = try takeLock()
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
        let scratch = try lock.createScratch()
        var installed = false
        defer {
            close(scratch.descriptor)
            if !installed { unlink(scratch.path) }
        }
        guard FileIO.writeAll(scratch.descriptor, body), trailer.withUnsafeBytes({ FileIO.writeAll(scratch.descriptor, $0) }) else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot write \(scratch.path): \(String(cString: strerror(errno)))")
        }
        try lock.install(scratch.path)
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
    /// What `apply` would find the index to be, without writing anything: `.patched` for an
    /// index it can patch, `.damaged` or `.unsupported` as `apply` reports them.
    package static func inspect(indexPath: String) -> Outcome {
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
    package static func order(_ paths: [TreePath]) -> (positions: [Int], bytes: [[UInt8]]) {
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
    package static func sortedLatest(_ updates: [Update]) -> [Update] {
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
