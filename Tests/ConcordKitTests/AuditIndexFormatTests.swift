import ConcordGit
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The audit index's text (`AuditIndex`): the tip it covers is the last complete tip line; a torn
/// batch after it does not count; a query finds a record's commits, each once, newest first.
final class AuditIndexFormatTests: XCTestCase {
    private let a = String(repeating: "a1", count: 20), b = String(repeating: "b2", count: 20), c = String(repeating: "c3", count: 20)

    func testTheCoveredTipIsTheLastCompleteTipLine() {
        let covered = AuditIndex.header + "c \(a) 100 vocabulary/x/r.json\nt \(a)\nc \(b) 200 vocabulary/x/r.json\t=vocabulary/r\nt \(b)\n"
        XCTAssertEqual(AuditIndex.coveredTip(in: Array(covered.utf8)).0?.hex, b)
        XCTAssertEqual(AuditIndex.coveredTip(in: Array(covered.utf8)).1, covered.utf8.count)
        // A batch without its tip line, and a torn line: cut off.
        for torn in ["c \(c) 300 vocabulary/x/r.json\n", "c \(c) 300 vocab", "t \(c.prefix(20))"] {
            let (tip, end) = AuditIndex.coveredTip(in: Array((covered + torn).utf8))
            XCTAssertEqual(tip?.hex, b, torn)
            XCTAssertEqual(end, covered.utf8.count, torn)
        }
        XCTAssertNil(AuditIndex.coveredTip(in: Array(AuditIndex.header.utf8)).0)
        XCTAssertNil(AuditIndex.coveredTip(in: []).0)
    }

    func testAQueryListsEachCommitOnceNewestFirst() {
        let text = AuditIndex.header + "c \(a) 100 vocabulary/x/r.json\nt \(a)\nc \(b) 200 vocabulary/x/rr.json\t=vocabulary/r\n"
            + "c \(c) 200 logs/2026-11-24.jsonl\tvocabulary/x/r.json\nt \(c)\nc \(a) 100 vocabulary/x/r.json\nt \(c)\n"
        let bytes = Array(text.utf8)
        XCTAssertEqual(AuditIndex.commits(in: bytes, path: "vocabulary/x/r.json").map(\.commit.hex), [c, a], "exact paths only; a once")
        XCTAssertEqual(AuditIndex.commits(in: bytes, path: "=vocabulary/r").map(\.commit.hex), [b])
        XCTAssertEqual(AuditIndex.commits(in: bytes, path: "logs/", prefix: true).map(\.commit.hex), [c])
        XCTAssertEqual(AuditIndex.commits(in: bytes, path: "vocabulary/", prefix: true).map(\.commit.hex), [c, b, a],
                       "same time: the later line first")
    }
}
