@testable import ConcordGit
import ConcordGitFormats
import XCTest

/// A libgit2 failure that left no message is described in words, never as a raw code (issue 32:
/// `the server of origin refused this device's key (error -16)`).
final class GitErrorWordsTests: XCTestCase {
    func testEveryReturnCodeReadsAsWords() {
        for result in Int32(-40)...Int32(-1) {
            let words = GitError.words(for: result)
            XCTAssertFalse(words.contains(where: \.isNumber), "libgit2's \(result) reads \"\(words)\"")
        }
        XCTAssertEqual(GitError.words(for: -16), "authentication failed: the server accepted none of this device's keys")
    }
}
