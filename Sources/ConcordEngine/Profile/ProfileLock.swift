import ConcordGit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock on one profile for the duration of a write or sync, held with `flock(2)` on
/// `.git/concord/lock`. The kernel drops it when the holder exits or is killed, so a crashed
/// process can never leave a profile locked.
///
/// The holder writes its pid into the lock file and clears it on a clean release. A new holder
/// that finds a pid there knows the previous holder died mid-way, and removes the git `.lock`
/// files (refs, index, config) that it may have left, which libgit2 would otherwise refuse
/// forever (`GIT_ELOCKED`). A holder that exits without finishing (`keepMarkedAsDied`) leaves
/// `unfinished` instead: the next holder repairs, but leaves fresh git locks alone — that holder
/// failed on a lock a running git command still holds, so the lock is not concord's to remove.
final class ProfileLock {
    private let descriptor: Int32
    /// True when the previous holder was killed while holding the lock (it left its pid behind),
    /// or exited leaving its work unfinished: what it left must be repaired.
    let previousHolderDied: Bool
    private static let unfinishedMark = "unfinished"

    /// Waits up to `timeout` seconds for the lock, trying again after 50 µs, then twice as long each
    /// time up to 2 ms: a short hold (a commit's last steps, which a store's watcher wakes during,
    /// told of the ref's move) is waited for about as long as it lasts, a long one at 500 tries a second.
    init(gitDirectory: String, timeout: TimeInterval = 60) throws {
        let directory = gitDirectory + "concord"
        mkdir(directory, 0o755)
        let path = directory + "/lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ConcordError.io(.open, path: path, "cannot open lock file \(path): \(String(cString: strerror(errno)))")
        }
        let deadline = Date().addingTimeInterval(timeout)
        var pause: useconds_t = 50
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
                close(descriptor)
                throw ConcordError.busy(gitDirectory)
            }
            usleep(pause)
            pause = min(pause * 2, 2_000)
        }
        let left = Self.readContent(descriptor)
        previousHolderDied = !left.isEmpty
        let killed = previousHolderDied && !left.hasPrefix(Self.unfinishedMark)
        writeContent("pid \(getpid())\n")
        // A killed holder's own git locks go at once. Otherwise git's locks are never removed by
        // age: a plain `git commit` whose editor is open holds `index.lock` for minutes, and git
        // writes no holder into it to check, so one older than a minute is no sign it is stale.
        // Concord's own pack temporaries go when no one has touched them for a minute.
        ProfileLock.clearGitLocks(in: gitDirectory, includingGitLocks: killed, olderThan: killed ? 0 : 60)
    }

    private var clearOnRelease = true

    /// Leaves the lock file marked `unfinished` on release: for a holder that could not finish
    /// repairing what the previous one left (the next holder repairs again).
    func keepMarkedAsDied() {
        clearOnRelease = false
    }

    deinit {
        writeContent(clearOnRelease ? "" : "\(Self.unfinishedMark) pid \(getpid())\n")
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    private static func readContent(_ descriptor: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
    }

    private func writeContent(_ text: String) {
        _ = ftruncate(descriptor, 0)
        let bytes = Array(text.utf8)
        if !bytes.isEmpty { _ = pwrite(descriptor, bytes, bytes.count, 0) }
    }

    /// Removes concord's temporaries (pack files being written, and the scratch index files
    /// written under git's `index.lock`, see `IndexLock`) older than `age` seconds and, with `includingGitLocks`
    /// (the previous concord holder was killed holding the profile lock), git's `.lock` files
    /// (index, HEAD, config, packed-refs, refs, packs) older than `age`. Only called while holding
    /// the profile lock.
    static func clearGitLocks(in gitDirectory: String, includingGitLocks: Bool, olderThan age: Int, now: Int = time(nil)) {
        let packs = (try? FileManager.default.contentsOfDirectory(atPath: gitDirectory + "objects/pack")) ?? []
        let scratchIndexes: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: gitDirectory)) ?? [])
            .filter { $0.hasPrefix("index" + IndexLock.scratchMark) }.map { gitDirectory + $0 }
        var candidates: [String] = packs.filter { $0.contains(".concord-tmp-") }.map { gitDirectory + "objects/pack/" + $0 }
        candidates += scratchIndexes
        guard includingGitLocks else { return remove(candidates, olderThan: age, now: now) }
        candidates += ["index.lock", "HEAD.lock", "config.lock", "packed-refs.lock"].map { gitDirectory + $0 }
            + packs.filter { $0.hasSuffix(".lock") }.map { gitDirectory + "objects/pack/" + $0 }
        if let walker = FileManager.default.enumerator(atPath: gitDirectory + "refs") {
            while let relative = walker.nextObject() as? String {
                if relative.hasSuffix(".lock") { candidates.append(gitDirectory + "refs/" + relative) }
            }
        }
        remove(candidates, olderThan: age, now: now)
    }

    private static func remove(_ candidates: [String], olderThan age: Int, now: Int) {
        for path in candidates {
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            if now - info.st_mtim.tv_sec >= age { unlink(path) }
        }
    }
}

extension Profile {
    /// Takes the profile lock. If the previous holder was killed, first finishes what it may have
    /// left half done: a bulk write journals the files it writes before its branch moves, and
    /// those are put back as the branch has them (`WorkingTree.restoreJournaledPaths`); otherwise the branch
    /// moves before the working tree is updated and the index is written last, so files whose
    /// index entry differs from the branch are brought up to date.
    /// Capabilities take it through `locked`, which releases it when their work ends.
    func lock() throws -> ProfileLock {
        let lock = try ProfileLock(gitDirectory: repository.gitDirectory)
        do {
            try workingTree.restoreJournaledPaths()
            // Under git's `index.lock` throughout, as a write: refused before any file is touched while git holds it.
            if lock.previousHolderDied { try gitCall { try repository.holdingIndexLock { try repairWorkingTree() } } }
        } catch {
            // Unfinished: the next holder must see this one as having died, and repair again.
            lock.keepMarkedAsDied()
            throw error
        }
        return lock
    }

    /// Runs `body` holding the profile lock (`lock()`: after finishing what a killed holder left),
    /// and releases it when `body` returns or throws: how every capability takes the lock.
    package func locked<T>(_ body: () throws -> T) throws -> T {
        let lock = try lock()
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }

    private func repairWorkingTree() throws {
        guard let workdir = repository.workdir, let head = try repository.resolveReference("HEAD") else { return }
        let headTree = try repository.commit(head).tree
        // A machine crash can leave the index damaged (it is never fsynced): rebuild it first.
        try repository.repairIndexIfDamaged(from: headTree)
        let indexTree = try repository.indexTree()
        if indexTree != headTree {
            let files = try repository.changedFiles(from: indexTree, to: headTree)
            // A hand edit made since is not overwritten: the user decides first.
            do { try workingTree.refuseOverwritingLocalEdits(files, finishingAWrite: true) } catch ConcordError.uncommittedEdits(let paths) {
                throw ConcordError.unfinishedUpdateBlocked(paths)
            }
            _ = try workingTree.update(files, to: headTree)
        }
        // Temporary files of an interrupted working-tree write.
        if let walker = FileManager.default.enumerator(atPath: workdir) {
            while let relative = walker.nextObject() as? String {
                if relative == ".git" { walker.skipDescendants(); continue }
                if relative.contains(".concord-tmp-") { try? FileManager.default.removeItem(atPath: workdir + relative) }
            }
        }
    }
}
