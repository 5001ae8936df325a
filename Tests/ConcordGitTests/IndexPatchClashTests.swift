@testable import ConcordGit
@testable import ConcordGitFormats
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
}
