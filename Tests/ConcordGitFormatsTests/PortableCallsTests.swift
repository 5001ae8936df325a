import ConcordTestSupport
@testable import ConcordGitFormats
import Foundation
import XCTest

/// The file calls that differ by platform, as this build has them: Linux's own in a normal build
/// there, the portable fallback elsewhere and built with `-DCONCORD_PORTABLE` (`make test-portable`).
final class PortableCallsTests: XCTestCase {
    /// `FileIO.exchange` swaps two files in one step with Linux's `renameat2(RENAME_EXCHANGE)`; the
    /// portable build has no such call and reports so, changing nothing (its caller then renames).
    func testExchangeSwapsTwoFilesOnLinuxAndChangesNothingInThePortableBuild() throws {
        let sandbox = try makeSandbox(prefix: "concord-portable-tests", removedBy: addTeardownBlock)
        let first = sandbox.appendingPathComponent("first").path, second = sandbox.appendingPathComponent("second").path
        try Data("one".utf8).write(to: URL(fileURLWithPath: first))
        try Data("two".utf8).write(to: URL(fileURLWithPath: second))

        let swapped = FileIO.exchange(first, second)

        #if os(Linux) && !CONCORD_PORTABLE
        XCTAssertTrue(swapped, "renameat2(RENAME_EXCHANGE) failed: \(String(cString: strerror(errno)))")
        #else
        XCTAssertFalse(swapped)
        #endif
        XCTAssertEqual(try String(contentsOfFile: first, encoding: .utf8), swapped ? "two" : "one")
        XCTAssertEqual(try String(contentsOfFile: second, encoding: .utf8), swapped ? "one" : "two")
    }

    /// With one of the two paths missing there is nothing to swap, in either build: false, and the
    /// file that is there stays where it is.
    func testExchangeWithAMissingPathChangesNothing() throws {
        let sandbox = try makeSandbox(prefix: "concord-portable-tests", removedBy: addTeardownBlock)
        let present = sandbox.appendingPathComponent("present").path, missing = sandbox.appendingPathComponent("missing").path
        try Data("here".utf8).write(to: URL(fileURLWithPath: present))

        XCTAssertFalse(FileIO.exchange(present, missing))

        XCTAssertEqual(try String(contentsOfFile: present, encoding: .utf8), "here")
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing))
    }
}
