@testable import ConcordEngine
@testable import ConcordKit
import ConcordTestSupport
import Foundation
import GRDB
import XCTest

/// The articles' `Symbol` (ConcordTestSupport's, declared as the articles declare it: the test
/// reads the articles and fails when their declaration is no longer this one), and every query of
/// the Modelling article's "Queries" section run against it: a query the article shows cannot throw
/// (`fieldNotNamed` did, for `\.label`).
final class ModellingArticleTests: KitTestCase {

    func testEveryArticleDeclaresSymbolAsThisTestRunsIt() throws {
        for name in ["Modelling.md", "GettingStarted.md", "ConcordKit.md"] {
            let text = try articleText(name)
            XCTAssertTrue(text.contains(Symbol.articleDeclaration), "\(name) declares Symbol otherwise than the test that runs its queries")
        }
    }

    func testTheModellingArticlesQueriesRun() async throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("board"), name: "Board", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice), kinds: [Symbol.kind])
        let symbols = [Symbol(id: "puzzle", label: "puzzle", page: 3, position: 2), Symbol(id: "juice", label: "juice", page: 1, position: 1),
                       Symbol(id: "push", label: "push", page: 3, position: 1), Symbol(id: "ball", label: "ball", page: 2, position: 4)]
        try await store.write { transaction in for symbol in symbols { try transaction.save(symbol) } }
        let text = try articleText("Modelling.md")
        for query in [#"Symbol.filter(\.page == 3).order(\.position).limit(20).fetchAll($0)"#, #"Symbol.filter(\.page >= 1).fetchCount($0)"#,
                      #"Symbol.filter(.hasPrefix(\.label, "pu")).fetchOne($0)"#,
                      #"Symbol.filter(.in(\.page, [1, 2])).order(\.position, descending: true).fetchAll($0)"#] {
            XCTAssertTrue(text.contains(query), "the article no longer shows \(query)")
        }
        let page3 = try await store.read { try Symbol.filter(\.page == 3).order(\.position).limit(20).fetchAll($0) }
        XCTAssertEqual(page3.map(\.id), ["push", "puzzle"])
        let count = try await store.read { try Symbol.filter(\.page >= 1).fetchCount($0) }
        XCTAssertEqual(count, 4)
        let first = try await store.read { try Symbol.filter(.hasPrefix(\.label, "pu")).fetchOne($0) }
        XCTAssertEqual(first?.id.hasPrefix("pu"), true)
        let some = try await store.read { try Symbol.filter(.in(\.page, [1, 2])).order(\.position, descending: true).fetchAll($0) }
        XCTAssertEqual(some.map(\.id), ["ball", "juice"])
        // The read-only SQL entry reads an index whose kinds have indexed fields (SQLite 3.40
        // refuses json_extract in an untrusted schema's indexes: the schema is checked to be Concord's own).
        let counted = try await store.read { try $0.sql("SELECT count(*) AS n FROM records WHERE kind = 'vocabulary'") }
        XCTAssertEqual(counted, [["n": .number("4")]])

        // Something planted in the index file (a view) is not Concord's: the schema stays untrusted.
        let queue = try DatabaseQueue(path: indexPath(store))
        try await queue.write { try $0.execute(sql: "CREATE VIEW planted AS SELECT json_extract(data, '$.label') AS label FROM records") }
        try queue.close()
        let refused = concordError { try store.read { try $0.sql("SELECT count(*) AS n FROM records") } }
        guard case .invalidInput(let why)? = refused else { return XCTFail("a planted view was trusted: \(String(describing: refused))") }
        XCTAssertEqual(why.code, .untrustedIndex)
        XCTAssertTrue(why.message.contains("unsafe use of json_extract") && why.message.contains("delete the file"), why.message)
        // As the message says: without the file, the next read builds it again.
        try FileManager.default.removeItem(atPath: try indexPath(store))
        let again = try await store.read { try $0.sql("SELECT count(*) AS n FROM records WHERE kind = 'vocabulary'") }
        XCTAssertEqual(again, [["n": .number("4")]])
    }

    /// The schema check and the statement it lets run see one snapshot of the index file: what
    /// another process changes after the check (rows, a planted view) is not there for the
    /// statement. Before, the statement began a read of its own, so the schema it ran under with
    /// trust was not the one checked (the authorizer still refused a planted view by name; an
    /// entry it does not name, such as an index's expression, ran trusted).
    func testAViewPlantedAfterTheSchemaCheckIsNotThereForTheStatement() async throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("board"), name: "Board", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice), kinds: [Symbol.kind])
        try await store.write { try $0.save(Symbol(id: "ball", label: "ball", page: 1, position: 1)) }
        let counted = try await store.read { try $0.sql("SELECT count(*) AS n FROM records WHERE kind = 'vocabulary'") }
        XCTAssertEqual(counted, [["n": .number("1")]])
        let checked = try ReadOnlySQLConnection(path: indexPath(store), trustingOwnSchema: true)
        let other = try DatabaseQueue(path: indexPath(store))
        try await other.write { database in
            try database.execute(sql: "CREATE VIEW planted AS SELECT json_extract(data, '$.label') AS label FROM records")
            try database.execute(sql: "DELETE FROM records")
        }
        try other.close()
        XCTAssertEqual(try checked.rows("SELECT count(*) AS n FROM records", arguments: [], timeLimit: .seconds(2)), [["n": .number("1")]],
                       "the statement read another snapshot than the check")
        XCTAssertThrowsError(try checked.rows("SELECT label FROM planted", arguments: [], timeLimit: .seconds(2))) { error in
            guard case ConcordError.invalidInput(let why) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(why.message.contains("no such table: planted"), why.message)
        }
    }

    /// The `sqlite_master` entries of `RecordIndexSchema.create` (their names do not matter to the check).
    private var ownMaster: [(type: String, name: String, sql: String?)] {
        RecordIndexSchema.create.map { sql in (sql.contains("CREATE TABLE") ? "table" : "index", "x", sql) }
    }

    /// What makes a schema Concord's own, entry by entry: SQLite's own entries pass only as SQLite
    /// makes them (a view or trigger named like them does not), and any entry `create` does not make fails.
    func testOnlyConcordsOwnSchemaIsTrusted() {
        let own = ownMaster
        let fields = [(kind: "vocabulary", field: "label")]
        let labelIndex = RecordIndexSchema.indexSQL(kind: "vocabulary", field: "label")!
        XCTAssertTrue(RecordIndexSchema.isOwn(master: own + [("index", "records:vocabulary:label", labelIndex)], indexedFields: fields))
        XCTAssertTrue(RecordIndexSchema.isOwn(master: own + [("table", "sqlite_stat1", "CREATE TABLE sqlite_stat1(tbl,idx,stat)"),
                                                             ("index", "sqlite_autoindex_files_1", nil)], indexedFields: []))
        let planted: [(type: String, name: String, sql: String?)] = [
            ("view", "sqlite_stat1", "CREATE VIEW sqlite_stat1 AS SELECT json_extract(data, '$.a') FROM records"),
            ("trigger", "sqlite_stat1", "CREATE TRIGGER t AFTER INSERT ON files BEGIN SELECT 1; END"),
            ("view", "sqlite_autoindex_x", "CREATE VIEW v AS SELECT 1"),
            ("index", "records:vocabulary:label", labelIndex),   // no indexed_fields row names it
            ("table", "extra", nil),
        ]
        for entry in planted {
            XCTAssertFalse(RecordIndexSchema.isOwn(master: own + [entry], indexedFields: []), "trusted: \(entry)")
        }
    }

    /// `indexed_fields` is read, with the schema still trusted, only once the rest of the schema is
    /// Concord's own: a view planted under that name never runs.
    func testIndexedFieldsIsReadOnlyOnceTheRestOfTheSchemaIsOwn() {
        func rows(of master: [(type: String, name: String, sql: String?)]) -> (asked: [String], own: Bool) {
            var asked = [String]()
            let own = RecordIndexSchema.isOwn { sql, _ in
                asked.append(sql)
                if sql.contains("sqlite_master") { return master.map { [$0.type, $0.name, $0.sql] } }
                return [["vocabulary", "label"]]
            }
            return (asked, own)
        }
        let own = ownMaster
        let labelIndex: (type: String, name: String, sql: String?) =
            ("index", "records:vocabulary:label", RecordIndexSchema.indexSQL(kind: "vocabulary", field: "label")!)
        let trusted = rows(of: own + [labelIndex])
        XCTAssertTrue(trusted.own)
        XCTAssertEqual(trusted.asked.count, 2, "\(trusted.asked)")
        let ownTables = own.filter { !$0.sql!.contains("indexed_fields") }
        let view: (type: String, name: String, sql: String?) =
            ("view", "indexed_fields", "CREATE VIEW indexed_fields AS SELECT json_extract(data, '$.kind') AS kind, '' AS field FROM records")
        for master in [ownTables + [view, labelIndex], own + [labelIndex, ("trigger", "t", "CREATE TRIGGER t AFTER INSERT ON files BEGIN SELECT 1; END")]] {
            let planted = rows(of: master)
            XCTAssertFalse(planted.own)
            XCTAssertEqual(planted.asked.count, 1, "read beyond sqlite_master: \(planted.asked)")
        }
    }
}
