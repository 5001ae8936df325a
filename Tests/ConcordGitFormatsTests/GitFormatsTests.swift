import CShims
import ConcordTestSupport
@testable import ConcordGitFormats
import Foundation
import XCTest

/// The git formats on their own, with no libgit2: zlib and the git CLI are the judges.
final class GitFormatsTests: XCTestCase {
    private var sandbox: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        sandbox = try makeSandbox(prefix: "concord-formats-tests", removedBy: addTeardownBlock)
    }

    private func git(_ arguments: [String], in directory: URL, input: Data? = nil) throws -> String {
        try ProcessRunner.runOK(gitPath, arguments, environment: isolatedEnvironment(home: sandbox), in: directory, input: input)
    }

    func testObjectIDHexRoundTripsAndRefusesBadHex() {
        let hex = "0123456789abcdef0123456789ABCDEF01234567"
        XCTAssertEqual(ObjectID(hex: hex)?.hex, hex.lowercased())
        XCTAssertEqual(ObjectID(hex: hex)?.short, "0123456")
        for bad in ["", String(hex.dropLast()), hex + "0", "g" + hex.dropFirst()] {
            XCTAssertNil(ObjectID(hex: bad), bad)
        }
    }

    /// Paths order by their bytes (the index's order), prefixes first, as a plain byte comparison says.
    func testTreePathsOrderByTheirBytes() throws {
        var generator = SeededGenerator(seed: 2026)
        let names = ["a", "a.json", "a-b", "ab", "b", "é", "Z", "a0", "00"]
        let paths = try (0..<400).map { _ in
            try TreePath((0..<Int.random(in: 1...3, using: &generator)).map { _ in names.randomElement(using: &generator)! }.joined(separator: "/"))
        }
        for (left, right) in zip(paths, paths.shuffled(using: &generator)) {
            XCTAssertEqual(left < right, Array(left.string.utf8).lexicographicallyPrecedes(Array(right.string.utf8)), "\(left) < \(right)")
        }
        XCTAssertEqual(paths.sorted().map(\.string), paths.map(\.string).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
    }

    /// An object id is git's: the same as `git hash-object` for the same bytes.
    func testObjectIDsMatchGitHashObject() throws {
        for text in ["", "{\"id\": \"x\"}\n", String(repeating: "é", count: 1000)] {
            let bytes = Array(text.utf8)
            let ours = ObjectPack.id(of: bytes, type: .blob)
            let theirs = try git(["hash-object", "--stdin"], in: sandbox, input: Data(bytes))
            XCTAssertEqual(ours.hex, theirs)
        }
        // Every type, and sizes of one to six digits in the header.
        for (type, size) in [(ObjectType.blob, 9), (.blob, 10), (.tree, 99), (.commit, 100), (.tree, 12_345), (.blob, 100_000)] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let theirs = try git(["hash-object", "-t", type.name, "--literally", "--stdin"], in: sandbox, input: Data(bytes))
            XCTAssertEqual(ObjectPack.id(of: bytes, type: type).hex, theirs, "\(type.name) of \(size) bytes")
        }
    }

    /// What SmallDeflater writes, zlib inflates back to the same bytes (through the bounded
    /// loose-object reader, which also checks the header and the stream's end).
    func testSmallDeflaterOutputInflatesThroughZlib() {
        var generator = SeededGenerator(seed: 11)
        for length in [0, 1, 3, 4, 5, 258, 259, 1000, SmallDeflater.maximumInput - 16] {   // header included
            let content = (0..<length).map { _ in UInt8.random(in: 0x61...0x64, using: &generator) }
            let object = ObjectPack.header(type: .blob, size: content.count) + content
            var deflated = [UInt8]()
            var deflater = SmallDeflater()
            object.withUnsafeBytes { deflater.append($0, to: &deflated) }
            var out: UnsafeMutablePointer<UInt8>?
            var outLength = 0
            XCTAssertEqual(concord_inflate_loose(deflated, deflated.count, content.count, &out, &outLength), 0, "length \(length)")
            XCTAssertEqual(Array(UnsafeBufferPointer(start: out, count: outLength)), object, "length \(length)")
            free(out)
        }
    }

    /// A pack and index written here are ones git reads: `git verify-pack` checks every object's
    /// id, CRC and both checksums.
    func testObjectPackPassesGitVerifyPack() throws {
        try git(["init", "-q", "--bare", "repo.git"], in: sandbox)
        var pack = ObjectPack()
        var ids = [ObjectID]()
        for index in 0..<300 { ids.append(try pack.add(Array("record \(index)\n".utf8))) }
        let directory = sandbox.appendingPathComponent("repo.git/objects/pack").path
        let name = try XCTUnwrap(try pack.write(toPackDirectory: directory, durable: false))
        let listing = try git(["verify-pack", "-v", "objects/pack/\(name).idx"], in: sandbox.appendingPathComponent("repo.git"))
        for id in ids { XCTAssertTrue(listing.contains(id.hex), "\(id) missing from the pack") }
        XCTAssertEqual(try git(["cat-file", "-p", ids[7].hex], in: sandbox.appendingPathComponent("repo.git")), "record 7")
    }

    /// A tree git builds (`git mktree`) parses entry by entry as git orders it; a truncated one is refused.
    func testRawTreeReadsGitMktreeAndRefusesATruncatedTree() throws {
        try git(["init", "-q", "--bare", "repo.git"], in: sandbox)
        let repository = sandbox.appendingPathComponent("repo.git")
        let blob = try XCTUnwrap(ObjectID(hex: try git(["hash-object", "-w", "--stdin"], in: repository, input: Data("x\n".utf8))))
        let subtree = try XCTUnwrap(ObjectID(hex: try git(["mktree"], in: repository, input: Data("100644 blob \(blob.hex)\tleaf\n".utf8))))
        let id = try git(["mktree"], in: repository, input: Data(["100644 blob \(blob.hex)\tb.json", "040000 tree \(subtree.hex)\tb",
                                                                  "100644 blob \(blob.hex)\tb-c"].map { $0 + "\n" }.joined().utf8))
        let bytes = Array(try ProcessRunner.run(gitPath, ["cat-file", "tree", id], environment: isolatedEnvironment(home: sandbox),
                                                in: repository).stdoutData)
        let tree = try RawTree(bytes, id: nil)
        XCTAssertEqual(tree.entries.map { String(decoding: tree.name($0), as: UTF8.self) }, ["b-c", "b.json", "b"])
        XCTAssertEqual(tree.index(of: Array("b".utf8)[...], isTree: true).map { tree.id(tree.entries[$0]) }, subtree)
        XCTAssertThrowsError(try RawTree(Array(bytes.dropLast()), id: nil), "a truncated tree is refused")
    }

    /// Names git refuses in a tree, in every spelling git treats as `.git`.
    func testGitPathRefusesWhatGitRefuses() {
        for bad in ["", ".", "..", ".git", ".GIT", ".git.", ".git ", "git~1", "GIT~1", "a\u{1}b", "a\\b", "a/b"] {
            XCTAssertFalse(GitPath.isSafeName(Array(bad.utf8)), bad.debugDescription)
        }
        for good in ["a", ".gitattributes", ".concord", "git", "..a", "a.json", "é"] {
            XCTAssertTrue(GitPath.isSafeName(Array(good.utf8)), good)
        }
        XCTAssertTrue(GitPath.isSafe(Array("vocabulary/ab/x.json".utf8)))
        for bad in ["a//b", "/a", "a/", "a/../b", "a/.git/b"] {
            XCTAssertFalse(GitPath.isSafe(Array(bad.utf8)), bad)
        }
    }
}
