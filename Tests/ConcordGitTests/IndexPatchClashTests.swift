@testable import ConcordGit
@testable import ConcordGitFormats
import ConcordTestSupport
import Foundation
import XCTest

/// `IndexPatch` leaves an update that would put a file where the index has a directory (or the
/// reverse) to libgit2, writing nothing; removing the clashing entry in the same update is fine.
final class IndexPatchClashTests: GitTestCase {
    func testAFileUnderAnIndexedFileOrOverAnIndexedDirectoryIsLeftToLibgit2() throws {
        let (repository, url) = try makeRepository()
        var files = ["notes/x": "file\n", "cards/y/z.json": "deep\n"]
        for number in 0..<40 { files["cards/w\(number).json"] = "\(number)\n" }
        try writeWithGit(files, in: url, commit: false)
        let indexPath = url.appendingPathComponent(".git/index").path
        let before = try Data(contentsOf: URL(fileURLWithPath: indexPath))
        let blob = try repository.writeBlob(Array("new\n".utf8))
        var info = stat()
        XCTAssertEqual(stat(indexPath, &info), 0)
        func apply(_ updates: [(String, Bool)]) throws -> IndexPatch.Outcome {
            let sorted = IndexPatch.sortedLatest(updates.map { IndexPatch.Update(path: TreePath(stringLiteral: $0.0), file: $0.1 ? (info, blob) : nil) })
            return try IndexPatch.apply(sorted, indexPath: indexPath, checksum: .written)
        }

        XCTAssertEqual(try apply([("notes/x/inner.json", true)]), .unsupported, "a file under the indexed file notes/x")
        XCTAssertEqual(try apply([("cards/y", true)]), .unsupported, "a file where the index has directory cards/y")
        XCTAssertEqual(try apply([("cards/w1.json/deeper", true), ("cards/a.json", true)]), .unsupported)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: indexPath)), before, "nothing written")

        XCTAssertEqual(try apply([("cards/y", false), ("cards/ya", true), ("notes/x2", true)]), .patched, "no clash: prefixes only")
        let listed = try gitOK(["ls-files"], in: url).split(separator: "\n")
        XCTAssertTrue(listed.contains("cards/ya") && listed.contains("notes/x2") && listed.contains("cards/y/z.json"))
    }

    /// The clash check filters index entries by the lengths of the changed paths before it looks
    /// anything up; with random paths of many lengths it must still find exactly the clashes the
    /// definition names: an entry below a file an update writes, or a file an update writes below it.
    func testTheLengthFilterFindsEveryClash() {
        var random = SeededGenerator(seed: 16)
        let names = ["a", "b", "ab", "cd.json", "x", "long-name", "w000001.json"]
        func randomPath() -> String {
            (0..<Int.random(in: 1...4, using: &random)).map { _ in names.randomElement(using: &random)! }.joined(separator: "/")
        }
        let info = stat()
        let blob = ObjectID(hex: String(repeating: "ab", count: 20))!
        for _ in 0..<300 {
            let updates = IndexPatch.sortedLatest((0..<Int.random(in: 1...4, using: &random)).map { _ in
                IndexPatch.Update(path: TreePath(stringLiteral: randomPath()), file: Bool.random(using: &random) ? (info, blob) : nil)
            })
            let upserts = updates.filter { $0.file != nil }.map { String(decoding: $0.path, as: UTF8.self) }
            let clashes = Clashes(updates)
            for _ in 0..<40 {
                let name = randomPath()
                let expected = upserts.contains { name.hasPrefix($0 + "/") || $0.hasPrefix(name + "/") }
                let found = Array(name.utf8).withUnsafeBytes { clashes.clash($0, updates: updates) }
                XCTAssertEqual(found, expected, "entry \(name), files written \(upserts)")
            }
        }
    }
}
