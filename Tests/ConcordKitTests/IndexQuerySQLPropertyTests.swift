import ConcordModel
import Foundation
import GRDB
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The record index's SQL (`IndexQuerySQL`) against the reference semantics (`IndexQuery.evaluate`,
/// a full scan), on 1,000 seeded random sets of records and 12 random queries each (12,000 queries), in one in-memory
/// SQLite database with the index's own schema, emptied for each set: half the sets with expression indexes on random
/// fields (the plans SQLite picks with them must answer the same). The replicated histories
/// behind a real index are `RecordIndexTests`; this covers the many cases of the query rule itself.
final class IndexQuerySQLPropertyTests: XCTestCase {
    static let seeds = 1_000

    func testTheSQLAnswersAsTheReferenceOnSeededRandomRecordsAndQueries() throws {
        var failures: [String] = []
        let database = try DatabaseQueue()
        try database.write { db in
            for statement in RecordIndexSchema.create { try db.execute(sql: statement) }
        }
        for seed in UInt64(1)...UInt64(Self.seeds) {
            var random = SeededGenerator(seed: seed &* 7_919)
            // Each set starts from an empty table with no expression indexes.
            try database.write { db in
                try db.execute(sql: "DELETE FROM records")
                for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") {
                    try db.execute(sql: "DROP INDEX \"\(name.replacingOccurrences(of: "\"", with: "\"\""))\"")
                }
                if Bool.random(using: &random) {
                    for field in ["page", "position", "label", "tags"] where Bool.random(using: &random) {
                        try db.execute(sql: RecordIndexSchema.indexSQL(kind: "vocabulary", field: field)!)
                    }
                }
            }
            var rows: [(id: String, data: [String: JSONValue])] = []
            for number in 0..<Int.random(in: 0...24, using: &random) {
                rows.append(("r\(number)", RecordIndexTests.randomData(&random)))
            }
            // A record of another kind with the same fields: never part of an answer.
            let other = RecordIndexTests.randomData(&random)
            try database.write { db in
                for (id, data) in rows + [("z-other", other)] {
                    try db.execute(sql: "INSERT INTO records(kind, id, data, file) VALUES (?, ?, ?, ?)",
                                   arguments: [id == "z-other" ? "settings" : "vocabulary", id,
                                               String(decoding: JSONValue.object(data).canonicalLine(), as: UTF8.self), Data()])
                }
            }
            for _ in 0..<12 {
                let query = RecordIndexTests.randomQuery(&random)
                let expected = query.evaluate(rows).map(\.id)
                let select = IndexQuerySQL.select(query), count = IndexQuerySQL.count(query)
                let (ids, counted) = try database.read { db in
                    (try Row.fetchAll(db, sql: select.sql, arguments: select.arguments).map { $0["id"] as String },
                     try Int.fetchOne(db, sql: count.sql, arguments: count.arguments) ?? -1)
                }
                if ids != expected || counted != expected.count {
                    failures.append("seed \(seed): \(query): SQL gave \(ids) (count \(counted)), the reference \(expected)")
                }
            }
            if failures.count >= 5 { break }
        }
        XCTAssertEqual(failures, [])
    }
}
