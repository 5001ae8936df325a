import ConcordModel
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// What a member's records or an app's SQL could do to the index (found by a review playing a
/// malicious member): each answer must stay the full scan's, and the raw SQL must stay read-only.
extension RecordIndexTests {
    /// SQLite 3.40's `json_extract` cuts a string at U+0000: without the row's evaluation in Swift
    /// (`IndexPlan`), a planted `"admin\u{0}-not-really"` answered `== "admin"`, `IN ["admin"]`
    /// and `<= "admin"`.
    func testAStringWithANulCharacterIsAnsweredAsTheScan() throws {
        let store = try storeWithRecords()
        _ = try store.write { transaction in
            try transaction.put([(kind: "vocabulary", id: "real", data: ["role": "admin"]),
                                 (kind: "vocabulary", id: "fake", data: ["role": .string("admin\u{0}-not-really")])])
        }
        try store.index([Kind("vocabulary", policy: .lww, writers: .editor, indexed: ["role"])])
        let queries = [IndexQuery(kind: "vocabulary", conditions: [.init("role", .equal("admin"))]),
                       IndexQuery(kind: "vocabulary", conditions: [.init("role", .isIn(["admin"]))]),
                       IndexQuery(kind: "vocabulary", conditions: [.init("role", .lessOrEqual("admin"))]),
                       IndexQuery(kind: "vocabulary", ordering: [.init("role")])]
        try store.read { reader in
            XCTAssertEqual(try reader.query(queries[0]).map(\.id.rawValue), ["real"])
            for query in queries {
                XCTAssertEqual(try reader.query(query).map(\.id), try reader.profile.records.scan(query).map(\.id), "\(query)")
                XCTAssertEqual(try reader.count(query), try reader.profile.records.scan(query).count, "\(query)")
            }
        }
    }

    /// SQLite compares a JSON path with the key as the JSON text escapes it: names with a
    /// backslash, a control character or non-ASCII characters are read another way, and match.
    func testFieldNamesAJSONPathCannotNameAnswerAsTheScan() throws {
        let store = try storeWithRecords()
        let names = ["a\\b", "c\nd", "tab\there", "é", "\u{7F}del"]
        _ = try store.write { transaction in
            try transaction.put([(kind: "vocabulary", id: "real", data: Dictionary(uniqueKeysWithValues: names.map { ($0, JSONValue.number("1")) }))])
        }
        try store.index([Kind("vocabulary", policy: .lww, writers: .editor, indexed: names)])
        try store.read { reader in
            for name in names {
                let query = IndexQuery(kind: "vocabulary", conditions: [.init(name, .equal(.number("1")))])
                XCTAssertEqual(try reader.query(query).map(\.id.rawValue), ["real"], name)
                XCTAssertEqual(try reader.count(query), 1, name)
            }
        }
    }

    /// A record file that does not decode (committed with plain git) is named by a query, as the
    /// scan names it, never left out of the answer without a word.
    func testARecordFileThatDoesNotDecodeIsNamedNotDropped() throws {
        let store = try storeWithRecords()
        let path = RecordPaths.file(directory: "vocabulary", id: "broken")
        let file = store.directory.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("{\"not\": \"a record\"}\n".utf8).write(to: file)
        try gitOK(["add", path], in: store.directory)
        try gitOK(["-c", "user.name=x", "-c", "user.email=x@x", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "a broken file"],
                  in: store.directory)
        let query = IndexQuery(kind: "vocabulary", conditions: [.init("page", .equal(.number("1")))])
        XCTAssertThrowsError(try store.read { try $0.query(query) }) { error in
            guard case ConcordError.corruptRecord(let named, _)? = error as? ConcordError else { return XCTFail("\(error)") }
            XCTAssertTrue(named.contains("broken"), named)
        }
        XCTAssertThrowsError(try store.read { try $0.count(query) })
    }

    /// Statements SQLite counts as reading but that change the connection or make files: refused
    /// by the authorizer (`sqlRefused`; `ReadOnlySQLTests` has the rest of the hostile SQL).
    func testRawSQLRefusesPragmasAttachAndVacuumHoweverWritten() throws {
        let store = try storeWithRecords()
        let attached = sandbox.appendingPathComponent("evil.sqlite").path
        for statement in ["/* x */ PRAGMA busy_timeout = 0", "PRAGMA busy_timeout(0)", "pragma query_only(0)",
                          "ATTACH '\(attached)' AS evil", "  attach database '\(attached)' as e2", "DETACH evil",
                          "VACUUM INTO '\(attached)'"] {
            XCTAssertThrowsError(try store.read { try $0.sql(statement) }, statement) { error in
                guard case ConcordError.sqlRefused? = error as? ConcordError else { return XCTFail("\(statement): \(error)") }
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: attached))
        // A column or value that merely contains one of the words still reads.
        XCTAssertEqual(try store.read { try $0.sql("SELECT 'attachment' AS pragmatic") }, [["pragmatic": .string("attachment")]])
    }
}
