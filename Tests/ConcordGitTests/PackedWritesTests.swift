import ConcordGit
import Foundation
import XCTest

/// `ObjectPack`: bulk blob writes land in one pack file instead of loose objects.
final class PackedWritesTests: GitTestCase {
    func testObjectPackMakesOnePackAndNoLooseBlobs() throws {
        let (repository, url) = try makeRepository()
        XCTAssertEqual(try looseObjects(url), [])
        var pack = ObjectPack()
        var blobs = [Int: ObjectID]()
        var edits = [TreePath: ObjectID?]()
        for index in 0..<200 {
            let blob = try pack.add(Array("record \(index)\n".utf8))
            blobs[index] = blob
            edits[try TreePath("records/r\(index).json")] = .some(blob)
        }
        XCTAssertEqual(pack.count, 200)
        try pack.write(into: repository)
        XCTAssertEqual(try packFiles(url).count, 1, "one pack")
        XCTAssertEqual(try packFiles(url, suffix: ".idx").count, 1, "with its index")
        XCTAssertEqual(try looseObjects(url), [], "no loose objects")
        for (index, id) in blobs {
            XCTAssertEqual(try repository.blob(id), Array("record \(index)\n".utf8))
        }
        // Trees and the commit built on the packed blobs are sound by git's judgement.
        let tree = try repository.writeTree(base: nil, edits: edits)
        let commit = try repository.createSignedCommit(tree: tree, parents: [], author: Self.author, message: "bulk\n",
                                                       sign: { _ in Self.fakeSignature })
        try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "bulk")
        XCTAssertEqual(try gitOK(["rev-list", "--objects", "--count", "HEAD"], in: url), "203")
        XCTAssertEqual(try gitOK(["cat-file", "-p", "HEAD:records/r7.json"], in: url), "record 7")
        let fsck = try git(["fsck", "--full", "--strict"], in: url)
        XCTAssertEqual(fsck.status, 0, fsck.stderr)
        let packPath = try XCTUnwrap(packFiles(url, suffix: ".idx").first).replacingOccurrences(of: ".idx", with: ".pack")
        let verify = try git(["verify-pack", "-v", packPath], in: url.appendingPathComponent(".git/objects/pack"))
        XCTAssertEqual(verify.status, 0, verify.stderr)
    }

    func testPackHoldsEachBlobOnce() throws {
        let (repository, url) = try makeRepository()
        var pack = ObjectPack()
        let one = try pack.add(Array("one\n".utf8))
        XCTAssertEqual(try pack.add(Array("one\n".utf8)), one, "the same content is the same blob")
        try pack.write(into: repository)
        let index = try XCTUnwrap(packFiles(url, suffix: ".idx").first)
        let listed = try gitOK(["show-index"], in: url,
                               input: try Data(contentsOf: url.appendingPathComponent(".git/objects/pack/\(index)")))
        XCTAssertEqual(listed.split(separator: "\n").count, 1, "the same content is packed once")
        XCTAssertEqual(try repository.blob(one), Array("one\n".utf8))
    }

    func testLargeAndEmptyBlobsRoundTrip() throws {
        let (repository, url) = try makeRepository()
        var pack = ObjectPack()
        var big = [UInt8]()
        for index in 0..<300_000 { big.append(UInt8(truncatingIfNeeded: index &* 31 &+ index >> 7)) }
        let bigID = try pack.add(big)
        let emptyID = try pack.add([])
        try pack.write(into: repository)
        XCTAssertEqual(try repository.blob(bigID), big, "multi-byte size headers are encoded right")
        XCTAssertEqual(try repository.blob(emptyID), [])
        XCTAssertEqual(try gitOK(["cat-file", "-s", bigID.hex], in: url), "300000")
    }

    func testAnUnwrittenPackLeavesNothing() throws {
        let (repository, url) = try makeRepository()
        var pack = ObjectPack()
        let id = try pack.add(Array("discarded\n".utf8))
        XCTAssertFalse(repository.contains(id))
        XCTAssertEqual(try looseObjects(url), [])
        XCTAssertEqual((try? packFiles(url)) ?? [], [])
    }
}
