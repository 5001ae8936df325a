import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The typed query builder: key paths and values become an `IndexQuery` whose results are the
/// reference semantics' (`IndexQuery.evaluate`), run through `StoreReader.query`/`count`, as a
/// `StoreRequest`; a key path with no field name is a typed error, not a crash.
final class TypedQueryTests: KitTestCase {
    private func makeStore(symbols: [SymbolRecord]) throws -> ConcordStore {
        let store = try makeStore()
        try store.write { transaction in for symbol in symbols { try transaction.save(symbol) } }
        return store
    }

    /// 60 symbols on 5 pages, positions with ties, labels sharing prefixes, some hidden, some with notes.
    private func symbols() -> [SymbolRecord] {
        var random = SeededGenerator(seed: 34)
        let words = ["puzzle", "pear", "plum", "apple", "apricot", "banana", "Pea", "péché"]
        return (0..<60).map { index in
            SymbolRecord(id: String(format: "s%02d", index), label: words[Int.random(in: 0..<words.count, using: &random)] + "\(index % 7)",
                   page: Int.random(in: 1...5, using: &random), position: Int.random(in: 0...9, using: &random),
                   weight: Double(Int.random(in: 0...40, using: &random)) / 8, hidden: Bool.random(using: &random),
                   note: index % 3 == 0 ? nil : "note \(index % 4)")
        }
    }

    func testTheIssuesExample() async throws {
        let store = try makeStore(symbols: [])
        try await store.write { try $0.save(SymbolRecord(id: "puzzle", label: "puzzle", page: 3, position: 2)) }
        try await store.write { try $0.save(SymbolRecord(id: "apple", label: "apple", page: 3, position: 1)) }
        try await store.write { try $0.save(SymbolRecord(id: "zebra", label: "zebra", page: 4, position: 0)) }
        let page3 = try await store.read { try SymbolRecord.filter(\.page == 3).order(\.position).fetchAll($0) }
        XCTAssertEqual(page3.map(\.id), ["apple", "puzzle"])
        let request = SymbolRecord.filter(\.page == 3).filter(.hasPrefix(\.label, "p"))
        XCTAssertEqual(request.observedKinds, ["vocabulary"])
        let fetched = try await store.read { try request.fetch($0) }
        XCTAssertEqual(fetched.map(\.id), ["puzzle"], "a StoreRequest")
    }

    func testResultsAreTheReferenceSemantics() throws {
        let store = try makeStore(symbols: symbols())
        let cases: [(RecordRequest<SymbolRecord>, IndexQuery)] = [
            (SymbolRecord.filter(\.page == 3).order(\.position),
             IndexQuery(kind: "vocabulary", conditions: [.init("page", .equal(3))], ordering: [.init("position")])),
            (SymbolRecord.filter(\.page != 3).filter(\.position >= 2).order(\.position, descending: true).order(\.label).limit(7, offset: 3),
             IndexQuery(kind: "vocabulary", conditions: [.init("page", .notEqual(3)), .init("position", .greaterOrEqual(2))],
                        ordering: [.init("position", descending: true), .init("label")], limit: 7, offset: 3)),
            (SymbolRecord.filter(.in(\.page, [1, 4])).filter(.hasPrefix(\.label, "p")).order(\.label),
             IndexQuery(kind: "vocabulary", conditions: [.init("page", .isIn([1, 4])), .init("label", .prefix("p"))],
                        ordering: [.init("label")])),
            (SymbolRecord.filter(\.weight < 2.5).filter(\.position <= 5).filter(\.page > 1).order(\.weight),
             IndexQuery(kind: "vocabulary", conditions: [.init("weight", .less(.number("2.5"))), .init("position", .lessOrEqual(5)),
                                                         .init("page", .greater(1))], ordering: [.init("weight")])),
            (SymbolRecord.filter(\.hidden == true).order(\.note, descending: true).limit(10),
             IndexQuery(kind: "vocabulary", conditions: [.init("hidden", .equal(true))], ordering: [.init("note", descending: true)], limit: 10)),
            (SymbolRecord.filter(\.note == "note 1").filter(.hasPrefix(\.note, "note")),
             IndexQuery(kind: "vocabulary", conditions: [.init("note", .equal("note 1")), .init("note", .prefix("note"))])),
            (SymbolRecord.filter(\.label >= "p").filter(\.label < "pf").order(\.hidden), IndexQuery(kind: "vocabulary",
                conditions: [.init("label", .greaterOrEqual("p")), .init("label", .less("pf"))], ordering: [.init("hidden")])),
            (SymbolRecord.limit(5, offset: 55), IndexQuery(kind: "vocabulary", limit: 5, offset: 55)),
            (SymbolRecord.order(\.page).order(\.position), IndexQuery(kind: "vocabulary", ordering: [.init("page"), .init("position")])),
        ]
        let rows = try store.read { reader in
            try reader.query(IndexQuery(kind: "vocabulary")).map { (id: $0.id.rawValue, data: $0.data ?? [:]) }
        }
        XCTAssertEqual(rows.count, 60)
        for (index, (request, expected)) in cases.enumerated() {
            XCTAssertEqual(try request.indexQuery(), expected, "case \(index)")
            let reference = expected.evaluate(rows).map(\.id)
            XCTAssertEqual(try store.read { try request.fetchAll($0) }.map(\.id), reference, "case \(index)")
            XCTAssertEqual(try store.read { try request.fetchCount($0) }, reference.count, "case \(index)")
            XCTAssertEqual(try store.read { try request.fetchOne($0) }?.id, reference.first, "case \(index)")
            XCTAssertFalse(reference.isEmpty && index < 4, "case \(index) selects something")
        }
    }

    func testFieldNamesAreTheStoredNamesNotThePropertyNames() throws {
        let store = try makeStore(symbols: [])
        try store.write { transaction in
            try transaction.save(TitledRecord(id: "b", title: "beta", rank: 2))
            try transaction.save(TitledRecord(id: "a", title: "alpha", rank: 1))
        }
        XCTAssertEqual(try store.read { try $0.get("vocabulary", "a").data }, ["name": "alpha", "order": 1])
        XCTAssertEqual(try TitledRecord.filter(\.title == "beta").order(\.rank).indexQuery(),
                       IndexQuery(kind: "vocabulary", conditions: [.init("name", .equal("beta"))], ordering: [.init("order")]))
        XCTAssertEqual(try store.read { try TitledRecord.order(\.rank, descending: true).fetchAll($0) }.map(\.id), ["b", "a"])
        XCTAssertEqual(try store.read { try TitledRecord.filter(.hasPrefix(\.title, "al")).fetchOne($0) }?.id, "a")
    }

    func testAKeyPathWithNoNameIsATypedError() throws {
        let store = try makeStore(symbols: [SymbolRecord(id: "a", label: "a", page: 1, position: 1)])
        let unnamed = concordError { try store.read { try UnnamedRecord.filter(\.page == 1).fetchAll($0) } }
        guard case .fieldNotNamed(let type, let keyPath)? = unnamed else { return XCTFail("\(String(describing: unnamed))") }
        XCTAssertEqual(type, "UnnamedRecord")
        XCTAssertFalse(keyPath.isEmpty)
        XCTAssertEqual(unnamed?.localizedDescription.contains("add it to UnnamedRecord.fields"), true)
        XCTAssertEqual(concordError { try SymbolRecord.order(\.id).indexQuery() }, .fieldNotNamed(type: "SymbolRecord", keyPath: String(describing: \SymbolRecord.id)))
        XCTAssertEqual(concordError { try store.read { try SymbolRecord.order(\.label).order(\.id).fetchCount($0) } },
                       .fieldNotNamed(type: "SymbolRecord", keyPath: String(describing: \SymbolRecord.id)), "the first problem is thrown when it runs")
        XCTAssertEqual(concordError { try SymbolRecord.filter(\.note == nil).indexQuery() },
                       .invalidInput(.badQuery, "a query compares strings, numbers and booleans; note is compared with null"))
        XCTAssertEqual(concordError { try SymbolRecord.filter(\.weight == .nan).indexQuery() },
                       .invalidInput(.notEncodable, "the value weight is compared with does not encode as JSON: at the top level: nan is not a JSON number"))
        XCTAssertEqual(concordError { try SymbolRecord.limit(-1).indexQuery() },
                       .invalidInput(.badQuery, "a query's limit and offset must not be negative (-1, 0)"))
    }
}

/// A type whose `CodingKeys` rename its properties: its field names say the stored names.
private struct TitledRecord: ConcordRecord {
    static let kind = SymbolRecord.kind
    static let fields: FieldNames<TitledRecord> = [\.title: "name", \.rank: "order"]
    var id: String
    var title: String
    var rank: Int

    enum CodingKeys: String, CodingKey {
        case id, title = "name", rank = "order"
    }
}
