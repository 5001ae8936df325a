import ConcordGit
import Foundation
import XCTest

/// `withPackedWrites`: bulk writes land in one pack file instead of loose objects.
final class PackedWritesTests: GitTestCase {
    func testPackedWritesMakeOnePackAndNoLooseObjects() throws {
        let (repository, url) = try makeRepository()
        XCTAssertEqual(try looseObjects(url), [])
        var blobs = [Int: ObjectID]()
        let commit = try repository.withPackedWrites { batch -> ObjectID in
            var edits = [String: ObjectID?]()
            for index in 0..<200 {
                let blob = try batch.writeBlob(Array("record \(index)\n".utf8))
                blobs[index] = blob
                edits["records/r\(index).json"] = .some(blob)
            }
            let tree = try batch.writeTree(base: nil, edits: edits)
            return try batch.createSignedCommit(tree: tree, parents: [], author: Self.author, message: "bulk\n",
                                                sign: { _ in Self.fakeSignature })
        }
        XCTAssertEqual(try packFiles(url).count, 1, "one pack")
        XCTAssertEqual(try packFiles(url, suffix: ".idx").count, 1, "with its index")
        XCTAssertEqual(try looseObjects(url), [], "no loose objects")

        // The original handle reads everything.
        XCTAssertEqual(try repository.commit(commit).message, "bulk\n")
        XCTAssertEqual(blobs.count, 200)
        for (index, id) in blobs {
            XCTAssertEqual(try repository.blob(id), Array("record \(index)\n".utf8))
        }
        // So does git, and the repository is sound.
        try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "bulk")
        XCTAssertEqual(try gitOK(["rev-list", "--objects", "--count", "HEAD"], in: url), "203")
        XCTAssertEqual(try gitOK(["cat-file", "-p", "HEAD:records/r7.json"], in: url), "record 7")
        let fsck = try git(["fsck", "--full", "--strict"], in: url)
        XCTAssertEqual(fsck.status, 0, fsck.stderr)
        let verify = try git(["verify-pack", "-v", try XCTUnwrap(packFiles(url, suffix: ".idx").first).replacingOccurrences(of: ".idx", with: ".pack")],
                             in: url.appendingPathComponent(".git/objects/pack"))
        XCTAssertEqual(verify.status, 0, verify.stderr)

        // A second batch on top adds a second pack; older objects stay readable.
        let next = try repository.withPackedWrites { batch -> ObjectID in
            let tree = try batch.writeTree(base: try batch.commit(commit).tree,
                                           edits: ["records/new.json": .some(try batch.writeBlob(Array("new\n".utf8)))])
            return try batch.createSignedCommit(tree: tree, parents: [commit], author: Self.author, message: "more\n",
                                                sign: { _ in Self.fakeSignature })
        }
        XCTAssertEqual(try packFiles(url).count, 2)
        XCTAssertEqual(try looseObjects(url), [])
        try repository.updateReference("refs/heads/main", to: next, expected: commit, message: "more")
        XCTAssertEqual(try gitOK(["cat-file", "-p", "HEAD:records/new.json"], in: url), "new")
        XCTAssertEqual(try git(["fsck", "--full"], in: url).status, 0)
    }

    func testPackHoldsOnlyTheBatchsNewObjects() throws {
        // A batch on top of a big history should write a pack of its own objects, not the whole tree.
        let (repository, url) = try makeRepository()
        var files = [String: String?]()
        for index in 0..<100 { files["old/r\(index).json"] = "old \(index)\n" }
        let base = try commit(repository, files: files)
        let baseTree = try repository.commit(base).tree
        let next = try repository.withPackedWrites { batch -> ObjectID in
            let tree = try batch.writeTree(base: baseTree, edits: ["new/one.json": .some(try batch.writeBlob(Array("one\n".utf8)))])
            return try batch.createSignedCommit(tree: tree, parents: [base], author: Self.author, message: "one more\n",
                                                sign: { _ in Self.fakeSignature })
        }
        XCTAssertTrue(repository.contains(next))
        let index = try XCTUnwrap(packFiles(url, suffix: ".idx").first)
        let listed = try gitOK(["show-index"], in: url,
                               input: try Data(contentsOf: url.appendingPathComponent(".git/objects/pack/\(index)")))
        // New: the blob, the "new" tree, the root tree and the commit.
        XCTAssertEqual(listed.split(separator: "\n").count, 4, "the pack should hold only the 4 new objects")
    }

    func testBlobsWrittenInABatchWithoutACommitAreKept() throws {
        // The API promises the batch's objects are visible afterwards, commit or not.
        let (repository, url) = try makeRepository()
        let id = try repository.withPackedWrites { batch in try batch.writeBlob(Array("lonely blob\n".utf8)) }
        XCTAssertTrue(repository.contains(id), "a blob written in withPackedWrites was lost")
        XCTAssertEqual(try git(["cat-file", "-e", id.hex], in: url).status, 0)
    }

    func testAThrowingBatchWritesNothing() throws {
        struct Stop: Error {}
        let (repository, url) = try makeRepository()
        var written: ObjectID?
        XCTAssertThrowsError(try repository.withPackedWrites { batch -> Void in
            written = try batch.writeBlob(Array("discarded\n".utf8))
            throw Stop()
        })
        let id = try XCTUnwrap(written)
        XCTAssertFalse(repository.contains(id))
        XCTAssertEqual(try looseObjects(url), [])
        XCTAssertEqual((try? packFiles(url)) ?? [], [])
    }
}
