import XCTest

@testable import ConcordModel

final class RecordIDAndRoleTests: XCTestCase {
    func testValidIDs() throws {
        for raw in ["a", "A-z_0.9", "...", ".hidden", "x..y", String(repeating: "a", count: 128)] {
            XCTAssertEqual(try RecordID(raw).rawValue, raw)
        }
    }

    func testInvalidIDs() {
        for raw in ["", ".", "..", String(repeating: "a", count: 129), "a/b", "é", " ", "a b", "a\\b", "a:b", "\0"] {
            XCTAssertEqual(modelError { () throws(ModelError) in try RecordID(raw) }, .invalidRecordID(raw), raw)
        }
    }

    func testIDErrorMessage() {
        XCTAssertEqual(
            ModelError.invalidRecordID("a/b").errorDescription,
            #"invalid record id "a/b": use 1–128 characters from A–Z a–z 0–9 . _ - (not "." or "..")"#)
    }

    func testIDOrderingIsByBytes() throws {
        let ids = try ["b", "B", "a", "_", "-", "0"].map { (s: String) throws(ModelError) in try RecordID(s) }
        XCTAssertEqual(ids.sorted().map(\.rawValue), ["-", "0", "B", "_", "a", "b"])
        XCTAssertEqual(try RecordID("x").description, "x")
    }

    func testRoleOrderAndParsing() {
        XCTAssertEqual(Role.allCases.sorted(), [.viewer, .user, .editor, .admin])
        XCTAssertTrue(Role.viewer < .user && Role.user < .editor && Role.editor < .admin)
        XCTAssertEqual(Role(parsing: "Admin"), .admin)
        XCTAssertEqual(Role(parsing: "VIEWER"), .viewer)
        XCTAssertNil(Role(parsing: "owner"))
        XCTAssertEqual(Role.editor.rawValue, "editor")
    }

    func testMergePolicyRawValues() {
        XCTAssertEqual(MergePolicy.allCases.map(\.rawValue), ["lww", "append", "delete-wins"])
        XCTAssertEqual(MergePolicy.append.fileExtension, "jsonl")
        XCTAssertEqual(MergePolicy.deleteWins.fileExtension, "json")
    }

    func testErrorDescriptionsAreOneLine() {
        let errors: [ModelError] = [
            .invalidRecordID("x y"), .invalidKindName(""), .invalidDirectory("../x"),
            .malformedRecord(what: "field \"id\"", why: "is missing"), .malformedKindsFile("bad"),
            .invalidJSON(JSONParseError(line: 1, column: 2, message: "oops")), .notAnObject(what: "record"),
            .recordTooLarge(size: 2_000_000),
        ]
        for error in errors {
            let description = error.errorDescription ?? ""
            XCTAssertFalse(description.isEmpty)
            XCTAssertFalse(description.contains("\n"), description)
        }
        XCTAssertEqual(ModelError.invalidRecordID("a\nb").errorDescription?.contains("\"a\\nb\""), true)
    }
}
