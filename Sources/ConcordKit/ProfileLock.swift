import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock on one profile for the duration of a write, held with `flock(2)` on
/// `.git/concord/lock`. The kernel drops it when the holder exits or is killed, so a crashed
/// process can never leave a profile locked.
final class ProfileLock {
    private let descriptor: Int32

    /// Waits up to `timeout` seconds for the lock.
    init(gitDirectory: String, timeout: TimeInterval = 60) throws {
        let directory = gitDirectory + "concord"
        mkdir(directory, 0o755)
        let path = directory + "/lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ConcordError.io("cannot open lock file \(path): \(String(cString: strerror(errno)))")
        }
        let deadline = Date().addingTimeInterval(timeout)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
                close(descriptor)
                throw ConcordError.busy(gitDirectory)
            }
            usleep(2_000)
        }
        ProfileLock.clearStaleGitLocks(in: gitDirectory)
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Removes `index.lock` and branch `.lock` files left by a killed process. Only called while
    /// holding the profile lock, and only for lock files older than a minute, so a plain `git`
    /// command running right now keeps its lock.
    static func clearStaleGitLocks(in gitDirectory: String) {
        let candidates = [gitDirectory + "index.lock", gitDirectory + "HEAD.lock"]
            + ((try? FileManager.default.contentsOfDirectory(atPath: gitDirectory + "refs/heads")) ?? [])
                .filter { $0.hasSuffix(".lock") }.map { gitDirectory + "refs/heads/" + $0 }
        for path in candidates {
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            if time(nil) - info.st_mtim.tv_sec > 60 { unlink(path) }
        }
    }
}
