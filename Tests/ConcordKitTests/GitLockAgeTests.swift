import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// A git `.lock` file is never removed for its age: a plain `git commit` whose editor has been open
/// for minutes holds `index.lock` all that time (removing it after 60 s made that commit fail with
/// `cannot lock ref 'HEAD'`). Only a concord holder killed while holding the profile lock has its
/// git locks removed by the next holder.
final class GitLockAgeTests: KitTestCase {
    func testAnIndexLockHoursOldIsLeftWhileAConcordWriteWaitsOrFailsAndIsRemovedOnlyForAKilledHolder() async throws {
        let alice = try makeIdentity()
        var environment = makeEnvironment(alice)
        environment.gitLockTimeout = 1   // the write below waits this long for the lock, then fails
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: environment)
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

    /// A live process holds `index.lock` (this test, which created it O_EXCL as git does): a write
    /// waits for it (`gitLockTimeout`), then fails with one line naming the file and what to do,
    /// having moved nothing and removed nothing; released while the write waits, the write goes through.
    func testAWriteWaitsForAHeldIndexLockThenFailsNamingItAndRemovesNothing() async throws {
        let alice = try makeIdentity()
        var environment = makeEnvironment(alice)
        environment.gitLockTimeout = 1
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: environment)
        try await store.write { try $0.put("vocabulary", "apple", data: ["label": "apple"]) }
        let gitDirectory = store.directory.appendingPathComponent(".git").path + "/"
        let lock = gitDirectory + "index.lock"
        let head = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        let descriptor = open(lock, O_RDWR | O_CREAT | O_EXCL, 0o644)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        var held = stat()
        XCTAssertEqual(fstat(descriptor, &held), 0)

        let started = Date()
        do {
            try await store.write { try $0.put("vocabulary", "pear", data: ["label": "pear"]) }
            XCTFail("a write went through a held index.lock")
        } catch ConcordError.gitIndexLocked(let path) {
            XCTAssertEqual(path, lock)
            XCTAssertEqual(ConcordError.gitIndexLocked(path).localizedDescription,
                           "another git process holds \(lock) (a `git commit` in this folder?): "
                           + "finish it, or remove the file if no git is running, and try again")
        }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.9, "it did not wait for the lock")
        var now = stat()
        XCTAssertEqual(stat(lock, &now), 0, "the held index.lock was removed")
        XCTAssertEqual(now.st_ino, held.st_ino, "the held index.lock was replaced")
        XCTAssertEqual(now.st_size, 0, "the held index.lock was written to")
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: store.directory), head, "the branch moved under a held index.lock")
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: store.directory), "", "a file was written")
        let left = try FileManager.default.contentsOfDirectory(atPath: gitDirectory).filter { $0.hasPrefix("index.") }
        XCTAssertEqual(left, ["index.lock"], "scratch files were left")

        // Released while a write waits for it: the write takes it and goes through.
        let release = Thread.detachNewThreadWithResult { () -> Int32 in
            usleep(300_000)
            close(descriptor)
            return unlink(lock)
        }
        try await store.write { try $0.put("vocabulary", "pear", data: ["label": "pear"]) }
        XCTAssertEqual(release.wait(seconds: 5), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: lock), "the write left its index.lock")
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: store.directory), "")
        fsckAtEnd(store.directory)
    }
}
