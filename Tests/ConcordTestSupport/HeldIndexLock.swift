// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// For tests of what a command does while git holds `.git/index.lock` (issue 42): the lock held
/// as git holds it, and a snapshot of everything that must then stay as it was.
extension ConcordTestCase {
    /// The environment that makes concord wait only `seconds` for git's `index.lock`
    /// (`CONCORD_GIT_LOCK_TIMEOUT`), so a test of a held lock stays fast.
    package static func gitLockTimeout(_ seconds: Double = 0.5) -> [String: String] {
        ["CONCORD_GIT_LOCK_TIMEOUT": "\(seconds)"]
    }

    /// The test-only fault that makes the index write fail once the branch has moved
    /// (`ConcordEnvironment.failIndexAfterBranchMove`): the files are written, the index is not.
    package static let failIndexAfterBranchMove = ["CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE": "1"]

    /// Creates `profile`'s `.git/index.lock` as git does (O_EXCL, empty) and returns its path.
    package func holdGitIndexLock(in profile: URL, file: StaticString = #filePath, line: UInt = #line) -> URL {
        let lock = profile.appendingPathComponent(".git/index.lock")
        let descriptor = open(lock.path, O_RDWR | O_CREAT | O_EXCL, 0o644)
        XCTAssertGreaterThanOrEqual(descriptor, 0, "cannot create \(lock.path)", file: file, line: line)
        close(descriptor)
        return lock
    }

    /// What a command refused for a held `index.lock` must leave as it was: HEAD, every branch,
    /// the index's bytes, every file outside `.git`, the `.git/index*` names (no scratch file
    /// left) and the lock file itself (same inode, still empty).
    package func indexLockScene(_ profile: URL) throws -> IndexLockScene {
        let git = profile.appendingPathComponent(".git")
        var files = [String: Data]()
        let enumerator = FileManager.default.enumerator(at: profile, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            if url.lastPathComponent == ".git" { enumerator?.skipDescendants(); continue }
            if (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
                files[String(url.path.dropFirst(profile.path.count))] = try Data(contentsOf: url)
            }
        }
        var lock = stat()
        let held = stat(git.appendingPathComponent("index.lock").path, &lock) == 0
        return IndexLockScene(head: try gitOK(["rev-parse", "HEAD"], in: profile),
                              branches: try gitOK(["for-each-ref", "refs/heads"], in: profile),
                              index: try Data(contentsOf: git.appendingPathComponent("index")),
                              indexFiles: try FileManager.default.contentsOfDirectory(atPath: git.path).filter { $0.hasPrefix("index") }.sorted(),
                              workingTree: files,
                              lock: held ? "inode \(lock.st_ino), \(lock.st_size) bytes" : "none")
    }
}

/// See `ConcordTestCase.indexLockScene`.
package struct IndexLockScene: Equatable {
    package let head: String
    package let branches: String
    package let index: Data
    package let indexFiles: [String]
    package let workingTree: [String: Data]
    package let lock: String
}
#endif
