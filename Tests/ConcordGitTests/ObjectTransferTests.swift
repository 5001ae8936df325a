import ConcordGit
import Foundation
import XCTest

/// Fetching from and pushing to a repository on a local path by copying only the missing objects,
/// judged by git: the destination must pass `git fsck --full` and hold every object of the source.
final class ObjectTransferTests: GitTestCase {
    func testFetchCopiesWhatIsNewAndTheResultIsComplete() throws {
        let (source, sourceURL) = try makeRepository("source")
        let (destination, destinationURL) = try makeRepository("destination")
        var tip = try commit(source, files: ["kind/a.json": "a\n", "kind/b.json": "b\n", "other/deep/c.json": "c\n"])
        try source.updateReference("refs/heads/main", to: tip, expected: nil, message: "one")
        XCTAssertEqual(try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main",
                                                               into: "refs/remotes/origin/main"), tip)
        // More history, including a merge and a removed directory, then fetch again.
        let base = try source.commit(tip).tree
        let left = try commit(source, files: ["kind/a.json": "a2\n", "other/deep/c.json": nil], base: base, parents: [tip])
        let right = try commit(source, files: ["kind/new.json": "n\n"], base: base, parents: [tip])
        let merged = try commit(source, files: ["kind/new.json": "n\n"], base: try source.commit(left).tree, parents: [left, right])
        try source.updateReference("refs/heads/main", to: merged, expected: tip, message: "more")
        tip = merged
        let packsBefore = try packFiles(destinationURL).count
        XCTAssertEqual(try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main",
                                                               into: "refs/remotes/origin/main"), tip)
        XCTAssertEqual(try packFiles(destinationURL).count, packsBefore + 1, "one pack per fetch")
        XCTAssertEqual(try destination.resolveReference("refs/remotes/origin/main"), tip)
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: destinationURL).status, 0)
        let all = ["rev-list", "--objects", "refs/remotes/origin/main"]
        XCTAssertEqual(try gitOK(all, in: destinationURL).split(separator: "\n").sorted(),
                       try gitOK(["rev-list", "--objects", "main"], in: sourceURL).split(separator: "\n").sorted())

        // Nothing new: nothing copied, no new pack.
        try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        XCTAssertEqual(try packFiles(destinationURL).count, packsBefore + 1)
    }

    func testPushCopiesWhatTheBareRepositoryLacksThenComparesAndSwaps() throws {
        let (local, _) = try makeRepository("local")
        let bareURL = sandbox.appendingPathComponent("remote.git")
        _ = try Repository.create(at: bareURL.path, bare: true)
        let first = try commit(local, files: ["kind/a.json": "a\n"])
        try local.pushToLocalRepository(at: bareURL.path, ref: "refs/heads/main", tip: first, expected: nil)
        let second = try commit(local, files: ["kind/b.json": "b\n"], base: try local.commit(first).tree, parents: [first])
        try local.pushToLocalRepository(at: bareURL.path, ref: "refs/heads/main", tip: second, expected: first)
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: bareURL), second.hex)
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: bareURL).status, 0)
        // A push from a stale view of the remote is refused, and the ref stays where it was.
        let stale = try commit(local, files: ["kind/c.json": "c\n"], base: try local.commit(first).tree, parents: [first])
        let error = gitError { try local.pushToLocalRepository(at: bareURL.path, ref: "refs/heads/main", tip: stale, expected: first) }
        XCTAssertTrue(error?.code == .modified || error?.code == .exists, "\(String(describing: error))")
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: bareURL), second.hex)
    }

    func testAForgedObjectInTheSourceIsRefusedAndNothingChanges() throws {
        let (source, sourceURL) = try makeRepository("source")
        let (destination, destinationURL) = try makeRepository("destination")
        let tip = try commit(source, files: ["kind/a.json": "the real content\n"])
        try source.updateReference("refs/heads/main", to: tip, expected: nil, message: "one")
        // Replace the blob's loose file with other content under the same name.
        let blob = try XCTUnwrap(try source.entry(at: "kind/a.json", inTree: try source.commit(tip).tree)).id
        let forged = try gitOK(["hash-object", "-w", "--stdin"], in: sourceURL, input: Data("forged content\n".utf8))
        let objects = sourceURL.appendingPathComponent(".git/objects")
        let blobFile = objects.appendingPathComponent("\(blob.hex.prefix(2))/\(blob.hex.dropFirst(2))")
        try FileManager.default.removeItem(at: blobFile)
        try FileManager.default.copyItem(at: objects.appendingPathComponent("\(forged.prefix(2))/\(forged.dropFirst(2))"), to: blobFile)

        let error = gitError {
            try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        }
        XCTAssertTrue(error?.message.contains("does not match its content") == true, "\(String(describing: error))")
        XCTAssertNil(try destination.resolveReference("refs/remotes/origin/main"))
        XCTAssertEqual(try packFiles(destinationURL), [])
    }

    /// The trees a fetch reads are kept for the changed-files walk that follows, but only those
    /// whose bytes hash to their ids: a forged copy of a tree the destination already has (read
    /// from the source only to compare) must not stand in for the destination's own.
    func testAForgedBaseTreeInTheSourceDoesNotSkewTheChangedFiles() throws {
        let (source, sourceURL) = try makeRepository("source")
        let (destination, _) = try makeRepository("destination")
        let first = try commit(source, files: ["kind/a.json": "a\n", "kind/b.json": "b\n"])
        try source.updateReference("refs/heads/main", to: first, expected: nil, message: "one")
        try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        let second = try commit(source, files: ["kind/c.json": "c\n"], base: try source.commit(first).tree, parents: [first])
        try source.updateReference("refs/heads/main", to: second, expected: first, message: "two")

        // In the source, `kind` of the first commit now holds another tree's bytes (just a.json).
        let kindTree = try XCTUnwrap(try source.entry(at: "kind", inTree: try source.commit(first).tree)).id
        let aBlob = try XCTUnwrap(try source.entry(at: "kind/a.json", inTree: try source.commit(first).tree)).id
        let other = try gitOK(["mktree"], in: sourceURL, input: Data("100644 blob \(aBlob.hex)\ta.json\n".utf8))
        let objects = sourceURL.appendingPathComponent(".git/objects")
        let treeFile = objects.appendingPathComponent("\(kindTree.hex.prefix(2))/\(kindTree.hex.dropFirst(2))")
        try FileManager.default.removeItem(at: treeFile)
        try FileManager.default.copyItem(at: objects.appendingPathComponent("\(other.prefix(2))/\(other.dropFirst(2))"), to: treeFile)

        try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        let changes = try destination.changedFiles(from: try destination.commit(first).tree, to: try destination.commit(second).tree)
        XCTAssertEqual(changes.map(\.path), ["kind/c.json"])
    }
}
