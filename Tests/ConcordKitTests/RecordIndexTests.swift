import Foundation
import GRDB
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The record index answers every query exactly as a full scan does (`IndexQuery.evaluate` over
/// the files, `Records.scan`): after random writes, deletes and syncs of three replicas through a
/// bare remote, after its file was deleted, corrupted or left by another schema version, after an
/// update killed midway; and its raw SQL only reads.
final class RecordIndexTests: KitTestCase {
    /// Seeded: three stores syncing through a bare remote; after each step, random queries on a
    /// random replica give what the scan gives, and the count agrees.
    func testTheIndexAnswersAsAFullScanAcrossReplicas() throws {
        for seed in UInt64(1)...2 {
            var random = SeededGenerator(seed: seed)
            let stores = try replicas(seed: seed)
            // One replica keeps expression indexes on two fields: both plans must answer the same.
            try stores[1].index([Kind("vocabulary", policy: .lww, writers: .editor, indexed: ["page", "label"])])
            for step in 0..<36 {
                let store = stores.randomElement(using: &random)!
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    let items = Self.ids.shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)).map { id in
                        (kind: "vocabulary", id: id, data: Self.randomData(&random))
                    }
                    _ = try store.write { try $0.put(items) }
                case 5..<7:
                    let id = Self.ids.randomElement(using: &random)!
                    _ = try store.write { transaction in
                        if let record = try transaction.record("vocabulary", id), !record.isDeleted { try transaction.delete("vocabulary", id) }
                    }
                default:
                    _ = try store.sync()
                }
                let reader = stores.randomElement(using: &random)!
                for _ in 0..<6 {
                    let query = Self.randomQuery(&random)
                    try reader.read { reader in
                        let scanned = try reader.profile.records.scan(query)
                        let indexed = try reader.query(query)
                        XCTAssertEqual(indexed.map(\.id), scanned.map(\.id), "seed \(seed) step \(step): \(query)")
                        XCTAssertEqual(indexed, scanned, "seed \(seed) step \(step): \(query)")
                        XCTAssertEqual(try reader.count(query), scanned.count, "seed \(seed) step \(step): count of \(query)")
                    }
                }
            }
        }
    }

    /// Values where SQLite and a naive reading part ways: integers past 2^53 against doubles,
    /// arrays of different lengths (ordered by their compact JSON), field names with a dot or a
    /// quote, prefixes of multi-byte text.
    func testEdgeValuesAnswerAsTheScan() throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("edges"), name: "E", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let values: [JSONValue] = [
            .number("9007199254740993"), .number("9007199254740992"), .number("9007199254740992.0"), .number("-0"), .number("0.1"),
            .number("9223372036854775807"), .number("1e19"), .array([.number("1")]), .array([.number("1"), .number("2")]),
            .array([.array([.number("1")])]), .array([]), .object(["a": .number("1")]), .object([:]), .string("é"), .string("éa"),
            .string("e"), .string("\u{10FFFF}x"), .bool(true), .bool(false), .null,
        ]
        _ = try store.write { transaction in
            try transaction.put(values.enumerated().map { index, value in
                (kind: "vocabulary", id: "v\(index)", data: ["n": value, "a.b": values[(index * 7) % values.count], "q\"x": value])
            })
        }
        var queries = [IndexQuery]()
        for field in ["n", "a.b", "q\"x"] {
            queries.append(IndexQuery(kind: "vocabulary", ordering: [.init(field)]))
            queries.append(IndexQuery(kind: "vocabulary", ordering: [.init(field, descending: true)], limit: 7, offset: 3))
            for value in values {
                for comparison: IndexQuery.Comparison in [.equal(value), .less(value), .greaterOrEqual(value), .notEqual(value)] {
                    queries.append(IndexQuery(kind: "vocabulary", conditions: [.init(field, comparison)], ordering: [.init(field)]))
                }
            }
            for prefix in ["", "é", "e", "\u{10FFFF}"] {
                queries.append(IndexQuery(kind: "vocabulary", conditions: [.init(field, .prefix(prefix))]))
            }
            queries.append(IndexQuery(kind: "vocabulary", conditions: [.init(field, .isIn(Array(values.prefix(6))))]))
        }
        try store.index([Kind("vocabulary", policy: .lww, writers: .editor, indexed: ["n", "a.b", "q\"x"])])
        try store.read { [queries] reader in
            for query in queries {
                XCTAssertEqual(try reader.query(query).map(\.id), try reader.profile.records.scan(query).map(\.id), "\(query)")
            }
        }
    }

    func testADeletedIndexFileIsRebuilt() throws {
        let store = try storeWithRecords()
        let query = IndexQuery(kind: "vocabulary", conditions: [.init("page", .greaterOrEqual(.number("1")))], ordering: [.init("position")])
        let before = try store.read { try $0.query(query) }
        XCTAssertEqual(before.count, 15)
        for suffix in ["", "-wal", "-shm"] { unlink(indexPath(store) + suffix) }
        XCTAssertEqual(try store.read { try $0.query(query) }, before)
        XCTAssertTrue(FileManager.default.fileExists(atPath: indexPath(store)))
        _ = try store.write { try $0.delete("vocabulary", "w3") }
        XCTAssertEqual(try store.read { try $0.query(query) }.map(\.id.rawValue), before.map(\.id.rawValue).filter { $0 != "w3" })
    }

    func testACorruptIndexFileIsReplaced() throws {
        let store = try storeWithRecords()
        let query = IndexQuery(kind: "vocabulary", conditions: [.init("label", .prefix("word1"))], ordering: [.init("page", descending: true)])
        let expected = try store.read { try $0.profile.records.scan(query) }
        for suffix in ["-wal", "-shm"] { unlink(indexPath(store) + suffix) }
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: indexPath(store)))
        // Another process (a profile opened anew) finds garbage, and so does the store's open connection.
        let profile = try Profile.open(at: store.directory, environment: store.environment)
        XCTAssertEqual(try profile.index.query(query), expected)
        XCTAssertEqual(try store.read { try $0.query(query) }, expected)
        let header = try Data(contentsOf: URL(fileURLWithPath: indexPath(store))).prefix(15)
        XCTAssertEqual(String(decoding: header, as: UTF8.self), "SQLite format 3")
    }

    func testAnIndexOfAnotherSchemaVersionIsRebuilt() throws {
        let store = try storeWithRecords()
        let query = IndexQuery(kind: "vocabulary", ordering: [.init("label")], limit: 5, offset: 2)
        let expected = try store.read { try $0.query(query) }
        let other = try DatabaseQueue(path: indexPath(store))
        try other.write { db in
            try db.execute(sql: "UPDATE meta SET value = '99' WHERE key = 'schemaVersion'")
            try db.execute(sql: "DELETE FROM records")
        }
        try other.close()
        let profile = try Profile.open(at: store.directory, environment: store.environment)
        XCTAssertEqual(try profile.index.query(query), expected)
        let version = try profile.index.sql("SELECT value FROM meta WHERE key = 'schemaVersion'")
        XCTAssertEqual(version, [["value": .string(String(RecordIndexSchema.version))]])
    }

    func testRawSQLReadsAndRefusesWrites() throws {
        let store = try storeWithRecords()
        let rows = try store.read {
            try $0.sql("SELECT id, json_extract(data, '$.\"page\"') AS page FROM records WHERE kind = ? AND id = ?",
                       arguments: [.string("vocabulary"), .string("w7")])
        }
        XCTAssertEqual(rows, [["id": .string("w7"), "page": .number("3")]])
        for statement in ["DELETE FROM records", "INSERT INTO meta(key, value) VALUES ('x', 'y')", "DROP TABLE records",
                          "CREATE TABLE t(x)", "UPDATE meta SET value = '' WHERE key = 'commit'", "PRAGMA query_only = 0"] {
            XCTAssertThrowsError(try store.read { try $0.sql(statement) }, statement) { error in
                guard case ConcordError.sqlRefused? = error as? ConcordError else { return XCTFail("\(statement): \(error)") }
            }
        }
        XCTAssertEqual(try store.read { try $0.count(IndexQuery(kind: "vocabulary")) }, 20)
        XCTAssertThrowsError(try store.read { try $0.sql("SELECT nonsense FROM nowhere") })
    }


    // MARK: Fixtures

    static let ids = (0..<12).map { "r\($0)" }
    static let labels = ["", "a", "ab", "b", "é", "word", "word1", "Word", "z\u{1F600}"]

    /// A value of a random JSON type (what a field may hold on another replica or app version).
    static func randomValue(_ random: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .string(labels.randomElement(using: &random)!)
        case 3: return .number(["0.5", "-1", "2.0", "1e1", "3.25"].randomElement(using: &random)!)
        case 4: return .array([.number("1"), .string("x")].shuffled(using: &random))
        case 5: return .object(["k": .number(String(Int.random(in: 0...2, using: &random)))])
        default: return .number(String(Int.random(in: -1...4, using: &random)))
        }
    }

    static func randomData(_ random: inout SeededGenerator) -> [String: JSONValue] {
        var data = [String: JSONValue]()
        for field in ["page", "position", "label", "tags"] where Int.random(in: 0..<5, using: &random) > 0 {
            data[field] = field == "label" && Bool.random(using: &random) ? .string(labels.randomElement(using: &random)!) : randomValue(&random)
        }
        return data
    }

    static func randomQuery(_ random: inout SeededGenerator) -> IndexQuery {
        let fields = ["page", "position", "label", "tags", "missing"]
        let conditions = (0..<Int.random(in: 0...2, using: &random)).map { _ -> IndexQuery.Condition in
            let field = fields.randomElement(using: &random)!
            let value = randomValue(&random)
            let comparison: IndexQuery.Comparison
            switch Int.random(in: 0..<8, using: &random) {
            case 0: comparison = .equal(value)
            case 1: comparison = .notEqual(value)
            case 2: comparison = .less(value)
            case 3: comparison = .lessOrEqual(value)
            case 4: comparison = .greater(value)
            case 5: comparison = .greaterOrEqual(value)
            case 6: comparison = .prefix(labels.randomElement(using: &random)!)
            default: comparison = .isIn((0..<Int.random(in: 0...3, using: &random)).map { _ in randomValue(&random) })
            }
            return IndexQuery.Condition(field, comparison)
        }
        let ordering = (0..<Int.random(in: 0...2, using: &random)).map { _ in
            IndexQuery.Ordering(fields.randomElement(using: &random)!, descending: Bool.random(using: &random))
        }
        let limit = Bool.random(using: &random) ? Int.random(in: 0...6, using: &random) : nil
        return IndexQuery(kind: "vocabulary", conditions: conditions, ordering: ordering, limit: limit,
                          offset: Bool.random(using: &random) ? Int.random(in: 0...3, using: &random) : 0)
    }

    /// Three stores of one profile (alice's and two editors' clones) syncing through a bare remote.
    func replicas(seed: UInt64) throws -> [ConcordStore] {
        let root = sandbox.appendingPathComponent("seed\(seed)")
        let remote = root.appendingPathComponent("remote.git")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Sync.createBareRemote(at: remote)
        let alice = try makeIdentity("alice", device: "d\(seed)")
        let first = try ConcordStore.create(at: root.appendingPathComponent("alice"), name: "Index", template: .aac,
                                            identity: alice, environment: makeEnvironment(alice))
        try first.addRemote("origin", url: remote.path)
        var stores = [first]
        for name in ["bob", "carol"] {
            let identity = try makeIdentity(name, device: "d\(seed)")
            try first.addMember(name, role: .editor, device: identity.device, key: identity.key.publicKey)
            _ = try first.sync()
            stores.append(try ConcordStore.clone(url: remote.path, into: root.appendingPathComponent(name), identity: identity,
                                                 environment: makeEnvironment(identity)))
        }
        return stores
    }
}
