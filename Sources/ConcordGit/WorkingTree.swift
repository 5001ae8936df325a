// This file touches the libgit2 C API.
internal import CLibgit2
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file to bring the working tree and index in line with a new commit.
public struct WorkingTreeChange: Sendable {
    public let path: TreePath
    /// The new content and its blob id, or nil to remove the file.
    public let content: (bytes: [UInt8], blob: ObjectID)?

    public init(path: TreePath, bytes: [UInt8], blob: ObjectID) {
        self.path = path
        self.content = (bytes, blob)
    }

    public init(removing path: TreePath) {
        self.path = path
        self.content = nil
    }
}

extension Repository {
    /// Writes the changed files into the working tree and records them in the index (with their
    /// stat data, so `git status` stays clean without re-hashing), touching only the given paths.
    /// Bulk changes (a clone, an import) are written by one thread per core: creating files is
    /// mostly kernel work, and different directories can be created into in parallel. Kept over
    /// `git_checkout_tree` by bench row "G6 check out 10k records" (commit e9b7ede, 5 runs on 2
    /// shared cores): 251 ms for files and index here vs 727 ms through libgit2.
    ///
    /// The index is derived data: if it is damaged (a machine crash can leave it truncated or
    /// half-written), it is set aside as `.git/index.damaged` and rebuilt from `tree`, the tree
    /// these changes bring the working tree to, before the changes are recorded. Without `tree`
    /// a damaged index is an error.
    public func applyToWorkingTree(_ changes: [WorkingTreeChange], rebuildingDamagedIndexFrom tree: ObjectID? = nil) throws {
        guard let root = workdir else { return }
        let stats = try Self.writeFiles(changes.map { ($0.path, $0.content?.bytes) }, root: root)
        PerformanceTrace.step("files written")
        try recordInIndex(changes, stats: stats, order: IndexPatch.order(changes.map(\.path)), rebuildingDamagedIndexFrom: tree)
        PerformanceTrace.step("index updated")
    }

    /// Starts writing `files` (new content, or nil to remove the file) on other threads and
    /// returns at once, so a bulk write can hash and store its objects meanwhile.
    /// `finishWorkingTreeWrite` waits for the files and records them in the index with their blob
    /// ids; `waitForWorkingTreeWrite` only waits (when the commit failed).
    public func startWorkingTreeWrite(_ files: [(path: TreePath, bytes: [UInt8]?)]) -> WorkingTreeWrite {
        let write = WorkingTreeWrite(files)
        guard let root = workdir else {
            write.finish(.success([]))
            return write
        }
        DispatchQueue.global().async(group: write.group) {
            write.finish(Result { () throws(FileIO.Failure) -> [stat] in try Self.writeFiles(files, root: root) })
        }
        return write
    }

    /// `blobs` are the files' blob ids, in the order the files were given (nil for removals).
    /// The index patch is planned while the files are still being written (under git's
    /// `index.lock`, so a git command that needs the index meanwhile waits or fails as it would
    /// during any index write), and their stat data is filled in once they are.
    public func finishWorkingTreeWrite(_ write: WorkingTreeWrite, blobs: [ObjectID?], rebuildingDamagedIndexFrom tree: ObjectID?) throws {
        guard workdir != nil else { return try waitForWorkingTreeWrite(write) }
        do {
            try withIndexLock { lock in try finishWorkingTreeWrite(write, blobs: blobs, rebuildingDamagedIndexFrom: tree, under: lock) }
        } catch {
            _ = try? write.wait()   // never return while files are still being written
            throw error
        }
    }

    private func finishWorkingTreeWrite(_ write: WorkingTreeWrite, blobs: [ObjectID?], rebuildingDamagedIndexFrom tree: ObjectID?,
                                        under lock: IndexLock) throws {
        let order = IndexPatch.order(write.files.map(\.path))
        let changes = zip(write.files, blobs).map { file, blob in
            if let bytes = file.bytes, let blob { WorkingTreeChange(path: file.path, bytes: bytes, blob: blob) } else { WorkingTreeChange(removing: file.path) }
        }
        // Each path once (a path given twice takes the slower way below), in index order.
        let planned = order.positions.indices.dropFirst().allSatisfy { order.bytes[order.positions[$0 - 1]] != order.bytes[order.positions[$0]] }
            ? Self.indexUpdates(changes, order: order, stats: nil)
            : nil
        let preparation: IndexPatch.Preparation?
        do {
            preparation = try planned.map { try IndexPatch.prepare($0, under: lock, checksum: indexChecksum) }
        } catch {
            _ = try? write.wait()   // never return while files are still being written
            throw error
        }
        let stats = try write.wait()
        PerformanceTrace.step("files written")
        guard case .prepared(let patch)? = preparation else {
            return try recordInIndex(changes, stats: stats, order: order, rebuildingDamagedIndexFrom: tree)
        }
        try patch.finish(stats: Self.statsInIndexOrder(changes, stats: stats, order: order.positions).compactMap { $0 })
    }

    /// The changes as index updates, in index order (`order`), with their files' stat data
    /// (`stats`, in index order, as `statsInIndexOrder` gives it) or, while the files are still
    /// being written, placeholder stat data.
    private static func indexUpdates(_ changes: [WorkingTreeChange], order: (positions: [Int], bytes: [[UInt8]]),
                                     stats: [stat?]?) -> [IndexPatch.Update] {
        order.positions.enumerated().map { rank, index in
            IndexPatch.Update(path: changes[index].path, bytes: order.bytes[index],
                              file: changes[index].content.map { (stats?[rank] ?? stat(), $0.blob) })
        }
    }

    /// For each change in index order (`order`), the stat data of its written file (`stats`, in
    /// the order the files were written), or nil for a removal.
    private static func statsInIndexOrder(_ changes: [WorkingTreeChange], stats: [stat], order: [Int]) -> [stat?] {
        var statIndex = [Int](repeating: -1, count: changes.count), next = 0
        for (index, change) in changes.enumerated() where change.content != nil {
            statIndex[index] = next
            next += 1
        }
        return order.map { changes[$0].content == nil ? nil : stats[statIndex[$0]] }
    }

    public func waitForWorkingTreeWrite(_ write: WorkingTreeWrite) throws {
        _ = try write.wait()
    }

    /// Removes the removed files, then writes the others; returns the written files' stat data in
    /// order. Removals go first: one can empty (and so remove) a directory a written file needs.
    private static func writeFiles(_ files: [(path: TreePath, bytes: [UInt8]?)], root: String) throws(FileIO.Failure) -> [stat] {
        var checked = FileIO.CheckedDirectories()
        var writes = [(path: String, bytes: [UInt8])]()
        writes.reserveCapacity(files.count)
        for file in files {
            guard let bytes = file.bytes else {
                try FileIO.checkInside(file.path.string, root: root, checked: &checked)
                let fullPath = root + file.path.string
                if unlink(fullPath) != 0 && errno != ENOENT { throw FileIO.Failure(path: fullPath, operation: "remove") }
                FileIO.removeEmptyParents(of: fullPath, below: root)
                continue
            }
            writes.append((file.path.string, bytes))
        }
        return try FileIO.writeAllInside(writes, root: root)
    }

    /// Records written files and removals in the index: `stats` are the written files' stat data
    /// in `changes` order, `order` the changes' paths as bytes and their positions in index order.
    private func recordInIndex(_ changes: [WorkingTreeChange], stats written: [stat], order: (positions: [Int], bytes: [[UInt8]]),
                               rebuildingDamagedIndexFrom tree: ObjectID?) throws {
        let updates = Self.indexUpdates(changes, order: order, stats: Self.statsInIndexOrder(changes, stats: written, order: order.positions))
        let checksum = indexChecksum
        try withIndexLock { lock in
            switch try IndexPatch.apply(updates, under: lock, checksum: checksum) {
            case .patched:
                return
            case .unsupported:
                try updateIndexWithLibgit2(updates)
            case .damaged:
                guard let tree else {
                    throw GitError(function: "index read", code: .other(-1),
                                   message: "\(lock.indexPath) is damaged: remove it and run `git reset` to rebuild it from HEAD")
                }
                try rebuildDamagedIndex(from: tree)
                if try IndexPatch.apply(updates, under: lock, checksum: checksum) != .patched { try updateIndexWithLibgit2(updates) }
            }
        }
    }

    /// Runs `body` holding git's `index.lock` (see `IndexLock`): from before the branch tip a
    /// write builds on is read until the index shows the commit the branch moved to, so a plain
    /// `git commit` cannot commit an index older than the branch it commits on (issue 42). Every
    /// index write inside `body` goes through the held lock; nested calls share it. Waits up to
    /// `indexLockTimeout` seconds for a lock another process holds, then throws `IndexLockHeld`,
    /// removing nothing. A bare repository has no index: `body` just runs.
    public func holdingIndexLock<T>(_ body: () throws -> T) throws -> T {
        guard workdir != nil else { return try body() }
        return try withIndexLock { _ in try body() }
    }

    /// `body` with the held `index.lock`, taking it (and releasing it after `body`) when none is held.
    func withIndexLock<T>(_ body: (IndexLock) throws -> T) throws -> T {
        if let held = heldIndexLock { return try body(held) }
        let lock = try IndexLock(indexPath: gitDirectory + "index", timeout: indexLockTimeout)
        heldIndexLock = lock
        defer { heldIndexLock = nil }
        return try body(lock)
    }

    /// Whether a patched index ends with its SHA-1 (see `IndexPatch.Checksum`): as git's
    /// `index.skipHash` (or `feature.manyFiles`) says when set; otherwise skipped for an index
    /// over 2 MiB (about 20,000 records), where hashing it would cost more than a millisecond.
    package var indexChecksum: IndexPatch.Checksum {
        if let skip = configBool("index.skipHash") { return skip ? .skipped : .written }
        if configBool("feature.manyFiles") == true { return .skipped }
        return .skippedAbove(2 << 20)
    }

    /// libgit2 1.5 refuses an index that ends with a null trailer: restores its checksum first.
    /// Every libgit2 call that reads the repository's index goes through here.
    func prepareIndexForLibgit2() throws {
        guard workdir != nil else { return }
        let indexPath = gitDirectory + "index"
        try IndexPatch.restoreChecksum(indexPath: indexPath) {
            try heldIndexLock ?? IndexLock(indexPath: indexPath, timeout: indexLockTimeout)
        }
    }

    /// If the index is damaged (see `IndexPatch.Outcome.damaged`), sets it aside as
    /// `.git/index.damaged` and rebuilds it from `tree`; returns whether it did.
    @discardableResult
    public func repairIndexIfDamaged(from tree: ObjectID) throws -> Bool {
        guard IndexPatch.inspect(indexPath: gitDirectory + "index") == .damaged else { return false }
        try rebuildDamagedIndex(from: tree)
        return true
    }

    /// Sets the damaged index aside under git's `index.lock` (a git process running now keeps
    /// it), then writes a new one from `tree`.
    private func rebuildDamagedIndex(from tree: ObjectID) throws {
        try withIndexLock { lock in
            guard rename(lock.indexPath, lock.indexPath + ".damaged") == 0 else { throw FileIO.Failure(path: lock.indexPath, operation: "set aside") }
            try resetIndex(to: tree)
        }
    }

    /// The same index update through libgit2, for index files `IndexPatch` leaves alone. libgit2
    /// writes an index only through a `.lock` it creates itself, so under the held `index.lock`
    /// it writes a copy of the index, opened on a scratch path (`IndexLock.scratchPath`), which
    /// is then put in place of the index.
    func updateIndexWithLibgit2(_ updates: [IndexPatch.Update]) throws {
        try prepareIndexForLibgit2()
        try withIndexLock { lock in
            let scratch = lock.scratchPath()
            defer { unlink(scratch) }   // gone once installed; left by a failure otherwise
            if let bytes = FileIO.contents(atPath: lock.indexPath) {
                let copy = Self.createFile(scratch)
                let copied = copy >= 0 && bytes.withUnsafeBytes { FileIO.writeAll(copy, $0) }
                if copy >= 0 { close(copy) }
                guard copied else { throw FileIO.Failure(path: scratch, operation: "write") }
            }
            var index: OpaquePointer?
            try check("git_index_open", git_index_open(&index, scratch))
            defer { git_index_free(index) }
            for update in updates {
                let path = String(decoding: update.path, as: UTF8.self)
                guard let (info, blob) = update.file else {
                    let result = git_index_remove_bypath(index, path)
                    if result != GIT_ENOTFOUND.rawValue { try check("git_index_remove_bypath", result) }
                    continue
                }
                try path.withCString { (cPath) in
                    var entry = git_index_entry()
                    entry.ctime.seconds = Int32(truncatingIfNeeded: info.st_ctim.tv_sec)
                    entry.ctime.nanoseconds = UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec)
                    entry.mtime.seconds = Int32(truncatingIfNeeded: info.st_mtim.tv_sec)
                    entry.mtime.nanoseconds = UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec)
                    entry.dev = UInt32(truncatingIfNeeded: info.st_dev)
                    entry.ino = UInt32(truncatingIfNeeded: info.st_ino)
                    entry.mode = GIT_FILEMODE_BLOB.rawValue
                    entry.uid = info.st_uid
                    entry.gid = info.st_gid
                    entry.file_size = UInt32(truncatingIfNeeded: info.st_size)
                    entry.id = blob.raw
                    entry.path = cPath
                    try check("git_index_add", git_index_add(index, &entry))
                }
            }
            try check("git_index_write", git_index_write(index))
            try lock.install(scratch)
        }
    }

    /// Creates (or empties) the file at `path`, open for writing; -1 on failure.
    private static func createFile(_ path: String) -> Int32 {
        #if canImport(Glibc)
        Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #else
        Darwin.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #endif
    }

    /// The tree the index describes (written to the object database, as `git write-tree` does).
    public func indexTree() throws -> ObjectID {
        try prepareIndexForLibgit2()
        var index: OpaquePointer?
        try check("git_repository_index", git_repository_index(&index, handle))
        defer { git_index_free(index) }
        try check("git_index_read", git_index_read(index, 1))
        var oid = git_oid()
        try check("git_index_write_tree", git_index_write_tree(&oid, index))
        return ObjectID(oid)
    }

    /// Makes the index match `tree` exactly (no working tree files are written): used after bulk
    /// writes, where `git status` re-hashes each file once and then caches its stat data again.
    /// Written on a scratch path under the held `index.lock`, as `updateIndexWithLibgit2` does.
    public func resetIndex(to tree: ObjectID) throws {
        try withIndexLock { lock in
            let scratch = lock.scratchPath()
            defer { unlink(scratch) }   // gone once installed; left by a failure otherwise
            var index: OpaquePointer?
            try check("git_index_open", git_index_open(&index, scratch))
            defer { git_index_free(index) }
            try withTree(tree) { (tree) in
                try check("git_index_read_tree", git_index_read_tree(index, tree))
            }
            try check("git_index_write", git_index_write(index))
            try lock.install(scratch)
        }
    }
}

/// A working-tree write running on other threads (see `Repository.startWorkingTreeWrite`). The
/// result is set by the worker before the group is left and read only after waiting on it.
public final class WorkingTreeWrite: Sendable {
    let files: [(path: TreePath, bytes: [UInt8]?)]
    let group = DispatchGroup()
    private let result = Mutex<Result<[stat], FileIO.Failure>?>(nil)

    init(_ files: [(path: TreePath, bytes: [UInt8]?)]) { self.files = files }

    func wait() throws -> [stat] {
        group.wait()
        return try result.withLock { $0 }?.get() ?? []
    }

    /// Sets the write's outcome (by the worker, before it leaves `group`).
    func finish(_ outcome: Result<[stat], FileIO.Failure>) {
        result.withLock { $0 = outcome }
    }
}
