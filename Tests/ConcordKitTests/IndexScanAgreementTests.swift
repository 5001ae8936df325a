import ConcordModel
import Foundation
import GRDB
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The index (`RecordIndex.query`, `count`) and the full scan (`Records.scan`) give the same
/// answers on the values where they used to part ways (issue 42): Unicode spellings that Swift's
/// `==` takes as equal and SQLite's bytes do not (NFC and NFD, "Å" and the Angstrom sign), strings
/// holding U+0000 (which SQLite 3.40's `json_extract` cuts), emoji and numbers of every form; and
/// one record holding U+0000 no longer sends the rest of its kind to the scan.
final class IndexScanAgreementTests: KitTestCase {
    static let seeds: [UInt64] = [11, 12, 13]
    static let queriesPerSeed = 150

    /// Spellings that are canonically equivalent (Swift: equal) but other scalars (SQLite: not).
    static let strings: [String] = [
        "\u{E9}", "e\u{301}", "\u{E9}a", "e\u{301}a", "\u{C5}", "\u{212B}", "A\u{30A}", "caf\u{E9}", "cafe\u{301}",
        "admin", "admin\u{0}", "admin\u{0}-not-really", "\u{0}", "a\u{0}b", "", "a", "b", "Z",
        "\u{1F600}", "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}", "\u{1F1EB}\u{1F1F7}", "\u{10FFFF}x", "\u{FFFD}",
    ]
    /// Field names, with an NFC/NFD pair and an Angstrom pair (read with `json_each`, no JSON path).
    static let fields = ["label", "page", "tags", "\u{E9}t\u{E9}", "e\u{301}te\u{301}", "\u{C5}", "\u{212B}", "missing"]

    static func randomValue(_ random: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<14, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2..<7: return .string(strings.randomElement(using: &random)!)
        case 7: return .number(["0.5", "-1", "2.0", "1e1", "3.25", "-0", "9007199254740993", "9223372036854775807", "1e19", "0.1"]
            .randomElement(using: &random)!)
        case 8: return .array([.string(strings.randomElement(using: &random)!), .number("1")].shuffled(using: &random))
        case 9: return .object(["k": .string(strings.randomElement(using: &random)!)])
        default: return .number(String(Int.random(in: -2...4, using: &random)))
        }
    }

    static func randomData(_ random: inout SeededGenerator) -> [String: JSONValue] {
        var data = [String: JSONValue]()
        // At most one of each canonically equivalent pair of names: a Swift dictionary holds one.
        let names = fields.dropLast().shuffled(using: &random)
        for name in names where Int.random(in: 0..<3, using: &random) > 0 && data[name] == nil {
            data[name] = randomValue(&random)
        }
        return data
    }

    static func randomQuery(_ random: inout SeededGenerator) -> IndexQuery {
        let conditions = (0..<Int.random(in: 0...2, using: &random)).map { _ -> IndexQuery.Condition in
            let field = fields.randomElement(using: &random)!
            let value = randomValue(&random)
            let comparison: IndexQuery.Comparison
            switch Int.random(in: 0..<9, using: &random) {
            case 0, 1: comparison = .equal(value)
            case 2: comparison = .notEqual(value)
            case 3: comparison = .less(value)
            case 4: comparison = .lessOrEqual(value)
            case 5: comparison = .greater(value)
            case 6: comparison = .greaterOrEqual(value)
            case 7: comparison = .prefix(strings.randomElement(using: &random)!)
            default: comparison = .isIn((0..<Int.random(in: 1...3, using: &random)).map { _ in randomValue(&random) })
            }
            return IndexQuery.Condition(field, comparison)
        }
        let ordering = (0..<Int.random(in: 0...2, using: &random)).map { _ in
            IndexQuery.Ordering(fields.randomElement(using: &random)!, descending: Bool.random(using: &random))
        }
        return IndexQuery(kind: "vocabulary", conditions: conditions, ordering: ordering,
                          limit: Bool.random(using: &random) ? Int.random(in: 0...8, using: &random) : nil,
                          offset: Bool.random(using: &random) ? Int.random(in: 0...5, using: &random) : 0)
    }

    /// The differential test: per seed, 40 random records (written in two commits, so both the
    /// rebuild and the update of the index fill it), expression indexes on some fields, and 150
    /// random queries; each query's records and count through the index equal the scan's.
    func testIndexAndScanAgreeOnSeededUnicodeNulAndNumberRecords() throws {
        var failures: [String] = []
        var answered = 0
        for seed in Self.seeds {
            var random = SeededGenerator(seed: seed)
            let alice = try makeIdentity("alice", device: "d\(seed)")
            let store = try ConcordStore.create(at: sandbox.appendingPathComponent("s\(seed)"), name: "S", template: .aac,
                                                identity: alice, environment: makeEnvironment(alice))
            let records = (0..<40).map { (kind: "vocabulary", id: "r\($0)", data: Self.randomData(&random)) }
            _ = try store.write { try $0.put(Array(records.prefix(25))) }
            _ = try store.read { try $0.count(IndexQuery(kind: "vocabulary")) }
            _ = try store.write { try $0.put(Array(records.suffix(15))) }
            if seed % 2 == 1 { try store.index([Kind("vocabulary", policy: .lww, writers: .editor, indexed: ["label", "page", "tags"])]) }
            let queries = (0..<Self.queriesPerSeed).map { _ in Self.randomQuery(&random) }
            failures += try store.read { reader -> [String] in
                guard case .index? = try? reader.profile.index.plan(kind: "vocabulary") else { return ["seed \(seed): the kind is answered by the scan"] }
                return try queries.compactMap { query in
                    let scanned = try reader.profile.records.scan(query).map(\.id.rawValue)
                    let indexed = try reader.query(query).map(\.id.rawValue)
                    let counted = try reader.count(query)
                    guard indexed != scanned || counted != scanned.count else { return nil }
                    return "seed \(seed): \(query): the index gave \(indexed) (count \(counted)), the scan \(scanned)"
                }
            }
            answered += queries.count
            if failures.count >= 5 { break }
        }
        XCTAssertEqual(failures, [])
        XCTAssertGreaterThanOrEqual(answered, 450)
    }

    /// The cases of issue 42 one by one: U+212B is not U+00C5, NFD is not NFC, on both paths.
    func testCanonicallyEquivalentSpellingsAreDifferentStringsOnBothPaths() throws {
        let store = try storeWithRecords()
        _ = try store.write { transaction in
            try transaction.put([(kind: "vocabulary", id: "nfc", data: ["label": .string("caf\u{E9}"), "\u{E9}": .number("1")]),
                                 (kind: "vocabulary", id: "nfd", data: ["label": .string("cafe\u{301}"), "e\u{301}": .number("1")]),
                                 (kind: "vocabulary", id: "ring", data: ["label": .string("\u{C5}")]),
                                 (kind: "vocabulary", id: "angstrom", data: ["label": .string("\u{212B}")])])
        }
        let cases: [(IndexQuery.Condition, [String])] = [
            (.init("label", .equal(.string("caf\u{E9}"))), ["nfc"]), (.init("label", .equal(.string("cafe\u{301}"))), ["nfd"]),
            (.init("label", .equal(.string("\u{C5}"))), ["ring"]), (.init("label", .equal(.string("\u{212B}"))), ["angstrom"]),
            (.init("label", .isIn([.string("\u{212B}")])), ["angstrom"]),
            (.init("label", .notEqual(.string("\u{212B}"))), ["nfc", "nfd", "ring"] + (0..<20).map { "w\($0)" }),
            (.init("\u{E9}", .equal(.number("1"))), ["nfc"]), (.init("e\u{301}", .equal(.number("1"))), ["nfd"]),
        ]
        try store.read { reader in
            for (condition, expected) in cases {
                let query = IndexQuery(kind: "vocabulary", conditions: [condition])
                XCTAssertEqual(try reader.query(query).map(\.id.rawValue).sorted(), expected.sorted(), "index: \(condition)")
                XCTAssertEqual(try reader.profile.records.scan(query).map(\.id.rawValue).sorted(), expected.sorted(), "scan: \(condition)")
            }
            let labels: [JSONValue] = [.string("caf\u{E9}"), .string("cafe\u{301}"), .string("\u{C5}"), .string("\u{212B}")]
            let ordered = IndexQuery(kind: "vocabulary", conditions: [.init("label", .isIn(labels))], ordering: [.init("label", descending: true)])
            XCTAssertEqual(try reader.query(ordered).map(\.id.rawValue), try reader.profile.records.scan(ordered).map(\.id.rawValue))
            XCTAssertEqual(try reader.query(ordered).map(\.id.rawValue), ["angstrom", "ring", "nfc", "nfd"], "by code points: U+212B, U+00C5, é, e")
        }
    }

    /// One record holding U+0000 is evaluated in Swift on its own; the rest of its kind still
    /// answers from SQL, as the plan says and as an uncommitted edit shows (the index reads the
    /// committed rows, the scan the working tree's files).
    func testOneNulRecordDoesNotSendItsKindToTheScan() throws {
        let store = try storeWithRecords()
        _ = try store.write { transaction in
            try transaction.put([(kind: "vocabulary", id: "fake", data: ["label": .string("word1\u{0}-not-really"), "page": .number("1")])])
        }
        XCTAssertEqual(try store.read { try $0.profile.index.plan(kind: "vocabulary") }, .index(rowsInSwift: 1))
        XCTAssertEqual(try store.read { try $0.sql("SELECT id FROM records WHERE has_nul") }, [["id": .string("fake")]])
        // w1's file edited by hand, not committed: the scan reads it, the index does not.
        let path = store.directory.appendingPathComponent(RecordPaths.file(directory: "vocabulary", id: "w1"))
        let edited = try String(contentsOf: path, encoding: .utf8).replacingOccurrences(of: "\"word1\"", with: "\"edited\"")
        try edited.write(to: path, atomically: true, encoding: .utf8)
        let query = IndexQuery(kind: "vocabulary", conditions: [.init("label", .prefix("word1"))], ordering: [.init("label")])
        try store.read { reader in
            // "word1" < "word1\u{0}-not-really" < "word10" by their bytes.
            XCTAssertEqual(try reader.query(query).map(\.id.rawValue), ["w1", "fake"] + (10...19).map { "w\($0)" })
            XCTAssertEqual(try reader.count(query), 12)
            XCTAssertFalse(try reader.profile.records.scan(query).map(\.id.rawValue).contains("w1"), "the scan reads the edited file")
            let equal = IndexQuery(kind: "vocabulary", conditions: [.init("label", .equal("word1"))])
            XCTAssertEqual(try reader.query(equal).map(\.id.rawValue), ["w1"], "not the NUL record, which json_extract would cut to word1")
            let page = IndexQuery(kind: "vocabulary", conditions: [.init("page", .equal(.number("1")))], ordering: [.init("label", descending: true)],
                                  limit: 2, offset: 3)
            // Descending: word9, word5, word17, word13, then the NUL record, then word1.
            XCTAssertEqual(try reader.query(page).map(\.id.rawValue), ["w13", "fake"])
            XCTAssertEqual(try reader.count(page), 2)
        }
        // Deleting the record ends its row's evaluation in Swift.
        try gitOK(["checkout", "--", "."], in: store.directory)
        _ = try store.write { try $0.delete("vocabulary", "fake") }
        XCTAssertEqual(try store.read { try $0.profile.index.plan(kind: "vocabulary") }, .index(rowsInSwift: 0))
    }

    /// An index of schema version 2 (before `has_nul`) is emptied and rebuilt as version 3.
    func testAVersion2IndexIsRebuilt() throws {
        let store = try storeWithRecords()
        let query = IndexQuery(kind: "vocabulary", ordering: [.init("label")], limit: 5, offset: 2)
        let expected = try store.read { try $0.query(query) }
        let old = try DatabaseQueue(path: indexPath(store))
        try old.write { db in
            try db.execute(sql: "DROP INDEX records_with_nul")
            try db.execute(sql: "ALTER TABLE records DROP COLUMN has_nul")
            try db.execute(sql: "CREATE INDEX records_with_nul ON records(kind) WHERE instr(data, '\\u0000') > 0")
            try db.execute(sql: "UPDATE meta SET value = '2' WHERE key = 'schemaVersion'")
            try db.execute(sql: "DELETE FROM records WHERE id = 'w3'")
        }
        try old.close()
        let profile = try Profile.open(at: store.directory, environment: store.environment)
        XCTAssertEqual(try profile.index.query(query), expected)
        XCTAssertEqual(try profile.index.sql("SELECT value FROM meta WHERE key = 'schemaVersion'"), [["value": .string("3")]])
        XCTAssertEqual(try profile.index.sql("SELECT count(*) AS n FROM records WHERE kind = 'vocabulary' AND NOT has_nul"), [["n": .number("20")]])
    }
}
