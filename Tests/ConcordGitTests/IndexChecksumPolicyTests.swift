@testable import ConcordGit
@testable import ConcordGitFormats
import Foundation
import XCTest

/// When a patched index ends with its SHA-1 and when with git's `index.skipHash` null trailer.
final class IndexChecksumPolicyTests: GitTestCase {
    func testTheSizeRuleAndGitsSettingsDecide() throws {
        let (repository, url) = try makeRepository()
        XCTAssertEqual(repository.indexChecksum, .skippedAbove(2 << 20), "unset: by size")
        XCTAssertFalse(IndexPatch.Checksum.skippedAbove(2 << 20).skips(size: 2 << 20))
        XCTAssertTrue(IndexPatch.Checksum.skippedAbove(2 << 20).skips(size: (2 << 20) + 1))
        XCTAssertFalse(IndexPatch.Checksum.written.skips(size: 1 << 30))
        XCTAssertTrue(IndexPatch.Checksum.skipped.skips(size: 32))

        try gitOK(["config", "feature.manyFiles", "true"], in: url)
        XCTAssertEqual(repository.indexChecksum, .skipped, "feature.manyFiles turns index.skipHash on")
        try gitOK(["config", "index.skipHash", "false"], in: url)
        XCTAssertEqual(repository.indexChecksum, .written, "index.skipHash wins over feature.manyFiles")
        try gitOK(["config", "index.skipHash", "true"], in: url)
        XCTAssertEqual(repository.indexChecksum, .skipped)
    }
}
