import ConcordModel
import Foundation
import GRDB
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The record index's read-only SQL entry (`StoreReader.sql`, `ReadOnlySQLRule`) against SQL an
/// app may pass on behalf of a hostile user: SQLite's own authorizer refuses what is not one
/// SELECT over the index's tables with the listed functions, before it runs, and says what; a
/// statement that runs on is stopped at the time limit; the index is unchanged after each.
final class ReadOnlySQLTests: KitTestCase {
    func testTheDocumentedQueriesStillRead() throws {
        let store = try storeWithRecords()
        try store.read { reader in
            XCTAssertEqual(try reader.sql("SELECT id, json_extract(data, '$.\"page\"') AS page FROM records WHERE kind = ? AND id = ?",
                                          arguments: [.string("vocabulary"), .string("w7")]),
                           [["id": .string("w7"), "page": .number("3")]])
            // docs/index.md's example, as the expression index serves it.
            let page = try reader.sql("""
                SELECT id, json_extract(data, '$."label"') AS label FROM records
                WHERE kind = 'vocabulary' AND json_extract(data, '$."page"') = 3
                ORDER BY json_extract(data, '$."position"'), id
                """)
            XCTAssertEqual(page.map { $0["id"] }, ["w19", "w15", "w11", "w7", "w3"].map { .string($0) })
            XCTAssertEqual(try reader.sql("SELECT count(*) AS n, sum(length(file)) > 0 AS sized FROM records WHERE kind = 'vocabulary'"),
                           [["n": .number("20"), "sized": .number("1")]])
            XCTAssertEqual(try reader.sql("SELECT value FROM meta WHERE key = 'schemaVersion'"),
                           [["value": .string(String(RecordIndexSchema.version))]])
            let each = try reader.sql("""
                SELECT r.id, e.key FROM records AS r, json_each(r.data) AS e
                WHERE r.kind = 'vocabulary' AND r.id = 'w1' ORDER BY e.key
                """)
            XCTAssertEqual(each.map { $0["key"] }, [.string("label"), .string("page"), .string("position")])
            XCTAssertEqual(try reader.sql("SELECT count(*) AS n FROM json_tree('{\"a\":[1,2]}')"), [["n": .number("4")]])
            XCTAssertEqual(try reader.sql("SELECT upper(substr(id, 1, 1)) || lower('X') AS a, coalesce(NULL, 2) AS b, "
                                          + "typeof(1.5) AS c, data ->> '$.page' AS d FROM records WHERE id = 'w2'"),
                           [["a": .string("Wx"), "b": .number("2"), "c": .string("real"), "d": .number("2")]])
            // A bounded recursive CTE runs: recursion is allowed, the time limit bounds it.
            XCTAssertEqual(try reader.sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) SELECT count(*) AS n FROM c"),
                           [["n": .number("100")]])
            XCTAssertEqual(try reader.sql("SELECT 'attachment' AS pragmatic -- a comment after it\n"), [["pragmatic": .string("attachment")]])
        }
    }

    func testHostileStatementsAreRefusedSayingWhatAndChangeNothing() throws {
        let store = try storeWithRecords()
        let attached = sandbox.appendingPathComponent("evil.sqlite").path
        let before = try snapshot(store)
        let refused: [(sql: String, says: String)] = [
            ("SELECT fts3_tokenizer('simple')", "it calls fts3_tokenizer()"),
            ("SELECT hex(fts3_tokenizer('simple')) AS leak", "it calls fts3_tokenizer()"),
            ("SELECT fts3_tokenizer('simple', x'4141414141414141')", "it calls fts3_tokenizer()"),
            ("SELECT * FROM pragma_table_info('records')", "table-valued function"),
            ("SELECT count(*) FROM pragma_table_info('records')", "table-valued function"),
            ("SELECT name FROM pragma_database_list", "table-valued function"),
            ("SELECT load_extension('/tmp/evil.so')", "it calls load_extension()"),
            ("SELECT sqlite_version()", "sqlite_version()"),
            ("SELECT * FROM sqlite_master", "it reads sqlite_master"), ("SELECT count(*) FROM sqlite_master", "it reads sqlite_master"),
            ("SELECT * FROM sqlite_schema", "it reads sqlite_"),
            ("SELECT * FROM temp.sqlite_master", "it reads sqlite_"),
            ("SELECT * FROM dbstat", "table-valued function"),
            ("BEGIN", "transaction"), ("BEGIN IMMEDIATE", "transaction"), ("COMMIT", "transaction"), ("ROLLBACK", "transaction"),
            ("SAVEPOINT s", "transaction"), ("RELEASE s", "transaction"),
            ("ATTACH '\(attached)' AS evil", "attaches"), ("DETACH evil", "attaches"),
            ("INSERT INTO meta(key, value) VALUES ('x', 'y')", "it writes meta"),
            ("DELETE FROM records", "it writes records"),
            ("UPDATE meta SET value = '' WHERE key = 'commit'", "it writes meta"),
            ("DROP TABLE records", "it "), ("CREATE TABLE t(x)", "it "), ("CREATE TEMP VIEW v AS SELECT 1", "it "),
            ("PRAGMA writable_schema = 1", "PRAGMA writable_schema"), ("PRAGMA query_only = 0", "PRAGMA query_only"),
            ("/* x */ PRAGMA busy_timeout = 0", "PRAGMA busy_timeout"), ("pragma table_info(records)", "PRAGMA table_info"),
            ("VACUUM INTO '\(attached)'", "not a SELECT"), ("VACUUM", "not a SELECT"), ("ANALYZE", "not a SELECT"),
            ("REINDEX", "not a SELECT"),
            ("SELECT 1; DELETE FROM records", "it writes records"), ("SELECT 1; SELECT 2", "more than one statement"),
            ("SELECT zeroblob(1000000000)", "it calls zeroblob()"), ("SELECT randomblob(8)", "randomblob()"),
            ("SELECT printf('%.*c', 1000000000, 'x')", "printf()"),
            ("SELECT id FROM records WHERE id IN (SELECT name FROM pragma_table_list)", "table-valued function"),
        ]
        for (sql, says) in refused {
            let error = concordError { try store.read { try $0.sql(sql) } }
            guard case .sqlRefused(let reason)? = error else {
                XCTFail("\(sql): \(String(describing: error))")
                continue
            }
            XCTAssertTrue(reason.contains(says), "\(sql): \(reason)")
            XCTAssertTrue(error!.localizedDescription.hasPrefix("the SQL was refused: it "), error!.localizedDescription)
            XCTAssertEqual(try snapshot(store), before, "\(sql) changed the index")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: attached))
        XCTAssertEqual(concordError { try store.read { try $0.sql("SELECT fts3_tokenizer('simple')") } }?.localizedDescription,
                       "the SQL was refused: it calls fts3_tokenizer(), which the read-only SQL entry does not allow: "
                           + "only one SELECT over the index's tables, calling the functions docs/index.md lists, is run")
        // Text that is not SQL, or names nothing, is bad input, as before.
        for sql in ["SELECT nonsense FROM nowhere", "SELEKT 1", "", "  -- only a comment", "SELECT readfile('/etc/passwd')"] {
            guard case .invalidInput? = concordError({ try store.read { try $0.sql(sql) } }) else { return XCTFail(sql) }
        }
        guard case .invalidInput? = concordError({ try store.read { try $0.sql("SELECT ?, ?", arguments: [.number("1")]) } }) else {
            return XCTFail("a missing argument")
        }
    }

    /// The endless recursive CTE of issue 42 stops with the time error, within the limit and a margin.
    func testARunawayStatementIsStoppedAtTheTimeLimit() throws {
        let store = try storeWithRecords()
        let before = try snapshot(store)
        let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
        for limit: Duration in [.milliseconds(300), RecordIndex.sqlTimeLimit] {
            let started = ContinuousClock.now
            let error = concordError { try store.read { try $0.sql(endless, timeLimit: limit) } }
            let took = ContinuousClock.now - started
            XCTAssertEqual(error, .sqlStopped(after: limit))
            XCTAssertGreaterThanOrEqual(took, limit)
            XCTAssertLessThan(took, limit + .seconds(1), "stopped \(took) after the start, the limit \(limit)")
        }
        XCTAssertEqual(ConcordError.sqlStopped(after: .seconds(2)).localizedDescription,
                       "the SQL ran longer than 2 s and was stopped: narrow it (a condition on kind or on an indexed field, a LIMIT) or allow it more time")
        // A cross join that would take minutes is stopped the same.
        let join = "SELECT count(*) FROM records a, records b, records c, records d, records e, records f"
        XCTAssertEqual(concordError { try store.read { try $0.sql(join, timeLimit: .milliseconds(200)) } }, .sqlStopped(after: .milliseconds(200)))
        XCTAssertEqual(try snapshot(store), before)
        // The connection that ran it is gone; the next statement reads normally.
        XCTAssertEqual(try store.read { try $0.sql("SELECT count(*) AS n FROM records WHERE kind = 'vocabulary'") }, [["n": .number("20")]])
    }

    /// The rule as a function of the authorizer's actions, on its own.
    func testTheRuleDecidesActionByAction() {
        XCTAssertNil(ReadOnlySQLRule.reason(refusing: .read(table: "records", column: "data", database: "main"), inSelect: true))
        XCTAssertNil(ReadOnlySQLRule.reason(refusing: .read(table: "json_each", column: "value", database: "main"), inSelect: true))
        XCTAssertNotNil(ReadOnlySQLRule.reason(refusing: .read(table: "records", column: "id", database: "evil"), inSelect: true))
        XCTAssertNil(ReadOnlySQLRule.reason(refusing: .function("JSON_EXTRACT"), inSelect: true))
        XCTAssertNotNil(ReadOnlySQLRule.reason(refusing: .function("fts3_tokenizer"), inSelect: true))
        XCTAssertNil(ReadOnlySQLRule.reason(refusing: .recursive, inSelect: true))
        XCTAssertEqual(ReadOnlySQLRule.reason(refusing: .write(table: "sqlite_master"), inSelect: false), "it writes sqlite_master, and the index is read-only")
        XCTAssertTrue(ReadOnlySQLRule.reason(refusing: .write(table: "sqlite_master"), inSelect: true)!.contains("table-valued"))
        var statement = ReadOnlySQLRule.Statement()
        XCTAssertTrue(statement.allows(.select))
        XCTAssertFalse(statement.allows(.pragma("writable_schema")))
        XCTAssertFalse(statement.allows(.function("load_extension")))
        XCTAssertEqual(statement.refusal, "it runs PRAGMA writable_schema, and pragmas are not run", "the first refusal is the reason")
    }

    /// What a refused or stopped statement could have changed: the index's rows, stamp and schema.
    private func snapshot(_ store: ConcordStore) throws -> [String] {
        _ = try store.read { try $0.count(IndexQuery(kind: "vocabulary")) }
        let queue = try DatabaseQueue(path: indexPath(store))
        defer { try? queue.close() }
        return try queue.read { db in
            try String.fetchAll(db, sql: "SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY name")
                + String.fetchAll(db, sql: "SELECT key || '=' || value FROM meta ORDER BY key")
                + String.fetchAll(db, sql: "SELECT kind || '/' || id || ' ' || data || ' ' || hex(file) FROM records ORDER BY kind, id")
                + String.fetchAll(db, sql: "SELECT kind || '/' || id || ' ' || state FROM files ORDER BY kind, id")
        }
    }
}
