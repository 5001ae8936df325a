import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordKit

/// A git `.lock` file is never removed for its age: a plain `git commit` whose editor has been open
/// for minutes holds `index.lock` all that time (removing it after 60 s made that commit fail with
/// `cannot lock ref 'HEAD'`). Only a concord holder killed while holding the profile lock has its
/// git locks removed by the next holder.
final class GitLockAgeTests: KitTestCase {
    func testAnIndexLockHoursOldIsLeftWhileAConcordWriteWaitsOrFailsAndIsRemovedOnlyForAKilledHolder() async throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        try await store.write { try $0.put("vocabulary", "apple", data: ["label": "apple"]) }
        let gitDirectory = store.directory.appendingPathComponent(".git").path + "/"
        let lock = gitDirectory + "index.lock"
        // A live holder: this test, which created it O_EXCL as git does, and dated it two hours back.
        let descriptor = open(lock, O_RDWR | O_CREAT | O_EXCL, 0o644)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        defer { close(descriptor) }
        var times = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, lock, &times, 0), 0)

        // Taking the profile lock (as every write and sync does) leaves it.
        do { _ = try ProfileLock(gitDirectory: gitDirectory, timeout: 5) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: lock), "an index.lock two hours old held by a live process was removed")
        ProfileLock.clearGitLocks(in: gitDirectory, includingGitLocks: false, olderThan: 60)
        XCTAssertTrue(FileManager.default.fileExists(atPath: lock), "removed by age")

        // A concord write meanwhile does not remove it either, whatever it answers.
        _ = try? await store.write { try $0.put("vocabulary", "pear", data: ["label": "pear"]) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: lock), "a concord write removed a live index.lock")

        // The previous concord holder killed holding the profile lock: its git locks go.
        ProfileLock.clearGitLocks(in: gitDirectory, includingGitLocks: true, olderThan: 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: lock), "a killed holder's index.lock was kept")
    }
}
