import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// git's lock on the index, `.git/index.lock`, created exclusively (`O_CREAT|O_EXCL`) as git
/// creates it, and held by concord from before it reads the branch tip it builds on until the
/// index shows the commit it moved the branch to (issue 42).
///
/// Why the whole span: a plain `git commit` reads HEAD, then takes `index.lock` to read and
/// refresh the index, and commits that index on the HEAD it read (its ref update is a
/// compare-and-swap against it). If concord moved the branch first and wrote the index only
/// afterwards, such a commit could read the new HEAD with the old index, and its commit — the
/// new HEAD's child — would delete what concord just wrote. With the lock held across concord's
/// whole sequence, a git command that reads the new HEAD takes the lock (and so reads the index)
/// only after concord's index is in place; one that read the old HEAD loses its ref update's
/// compare-and-swap (`cannot lock ref 'HEAD'`), or wins it first and concord's own
/// compare-and-swap fails and is retried on the new tip.
///
/// While the lock is held, each new index is written to a scratch file beside it
/// (`index.concord-tmp-<pid>-<n>`, see `scratchPath`) and put in place of `.git/index` by
/// `install` (exchanged with it, or renamed over it), the lock staying where it is: unlike git,
/// which writes the index into the lock file and renames that, concord may write the index
/// more than once in one hold (a damaged index rebuilt, then patched), and libgit2's index writer
/// insists on creating `<file>.lock` itself, so it is pointed at a scratch file of its own. No one
/// else writes the index while the lock exists, and both renames are atomic, so a reader sees the
/// old index or the new one, never a mix.
///
/// The lock file is removed when the lock is released (`deinit`), and only if it is still the
/// file this lock created. A lock file someone else holds is never removed here: after waiting
/// `timeout` seconds the lock fails with `IndexLockHeld`. A lock file left by a concord process
/// killed holding the profile lock is removed by the next holder (ProfileLock), never by its age.
package final class IndexLock {
    package let indexPath: String
    package let lockPath: String
    private let descriptor: Int32
    private let device: UInt64, inode: UInt64
    private var scratchFiles = 0
    /// Test-only fault: `install` fails, as a disk error would, leaving the index as it was. Set
    /// only by `Repository.updateReference` under `CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE=1`.
    package var failsInstalls = false

    /// Waits up to `timeout` seconds for `<indexPath>.lock`, trying again every few milliseconds
    /// (git holds it for milliseconds per command).
    package init(indexPath: String, timeout: Double) throws {
        self.indexPath = indexPath
        lockPath = indexPath + ".lock"
        let deadline = Date().addingTimeInterval(timeout)
        var descriptor: Int32
        while true {
            descriptor = open(lockPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if descriptor >= 0 { break }
            guard errno == EEXIST || errno == EINTR else {
                throw GitError(function: "index lock", code: .other(-1), message: "cannot create \(lockPath): \(String(cString: strerror(errno)))")
            }
            guard Date() < deadline else { throw IndexLockHeld(lockPath: lockPath, waited: timeout) }
            usleep(2_000)
        }
        var info = stat()
        fstat(descriptor, &info)
        self.descriptor = descriptor
        (device, inode) = (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    deinit {
        close(descriptor)
        // Only the file this lock created: never one another process made after it was removed.
        var info = stat()
        if stat(lockPath, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode { unlink(lockPath) }
    }

    /// A new path beside the index for the next index to install (nothing is created there).
    package func scratchPath() -> String {
        scratchFiles += 1
        return indexPath + "\(Self.scratchMark)\(getpid())-\(scratchFiles)"
    }

    /// What names a scratch file: a kill can leave one, which the next concord holder removes.
    package static let scratchMark = ".concord-tmp-"

    /// Creates a scratch file (see `scratchPath`) open for writing.
    package func createScratch() throws -> (path: String, descriptor: Int32) {
        let path = scratchPath()
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw GitError(function: "index write", code: .other(-1), message: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        return (path, descriptor)
    }

    /// Puts the written `scratch` in place of the index, the lock still held. Exchanging the two
    /// names, where the file system can, spares ext4's flush of a file renamed over another
    /// (auto_da_alloc: ~13 ms for a 9.6 MB index); the old index, now under the scratch name, goes.
    package func install(_ scratch: String) throws {
        if failsInstalls {
            unlink(scratch)
            throw GitError(function: "index write", code: .other(-1),
                           message: "cannot rename \(scratch) to \(indexPath): failed on purpose (CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE)")
        }
        if FileIO.exchange(scratch, indexPath) {
            unlink(scratch)
            return
        }
        guard rename(scratch, indexPath) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(scratch)
            throw GitError(function: "index write", code: .other(-1), message: "cannot rename \(scratch) to \(indexPath): \(reason)")
        }
    }
}

/// `.git/index.lock` stayed held by another process for as long as concord waits for it.
/// Not a `GitError`: a write must not be retried for it as if the branch had moved.
package struct IndexLockHeld: Error, CustomStringConvertible {
    package let lockPath: String
    package let waited: Double

    package var description: String {
        "another git process holds \(lockPath) (a `git commit` in this folder?); finish it, "
            + "or remove the file if no git is running, and try again"
    }
}
