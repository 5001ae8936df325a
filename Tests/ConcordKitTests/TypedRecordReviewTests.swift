import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The review findings on typed records (issue 34): a data member `id` never redirects a typed
/// save, unknown fields of array elements without ids never move to another element, and an
/// integer is decoded only from a number that denotes it exactly.
final class TypedRecordReviewTests: KitTestCase {
    /// A line of a note, in the newer version (with `color`) and the older one (without).
    struct LineV2: Codable, Hashable { var text: String; var color: String }
    struct LineV1: Codable, Hashable { var text: String }

    /// A note with lines (an array of objects without ids) and tags (a set of them).
    struct NoteV2: ConcordRecord {
        static let kind = SymbolRecord.kind
        var id: String
        var lines: [LineV2]
        var tags: Set<LineV2>
    }
    struct NoteV1: ConcordRecord {
        static let kind = SymbolRecord.kind
        var id: String
        var lines: [LineV1]
        var tags: Set<LineV1>
    }

    /// A record type with one field besides its id.
    struct Named: ConcordRecord, Equatable {
        static let kind = SymbolRecord.kind
        var id: String
        var label: String
    }

    private func line(_ text: String) -> LineV2 { LineV2(text: text, color: "color-" + text) }

    /// Saves a v2 note with `lines`, lets v1 change its lines, and returns the stored `lines`.
    private func linesAfter(_ lines: [LineV2], _ change: @escaping @Sendable (inout [LineV1]) -> Void) throws -> JSONValue? {
        let store = try makeStore()
        try store.write { try $0.save(NoteV2(id: "n", lines: lines, tags: [])) }
        try store.write { transaction in
            var old = try XCTUnwrap(try transaction.fetch(NoteV1.self, id: "n"))
            change(&old.lines)
            try transaction.save(old)
        }
        return try store.read { try $0.get("vocabulary", "n").data?["lines"] }
    }

    func testADataMemberIDNeitherRenamesTheValueNorRedirectsItsSave() throws {
        let store = try makeStore()
        try store.write { transaction in
            try transaction.put("vocabulary", "other", data: ["label": "the real other"])
            try transaction.put("vocabulary", "puzzle", data: ["id": "other", "label": "planted"])
        }
        XCTAssertEqual(try store.read { try $0.fetchAll(Named.self) }.map(\.id).sorted(), ["other", "puzzle"])
        XCTAssertEqual(try store.read { try $0.fetch(Named.self, id: "puzzle") }, Named(id: "puzzle", label: "planted"))
        try store.write { transaction in
            var value = try XCTUnwrap(try transaction.fetch(Named.self, id: "puzzle"))
            XCTAssertEqual(value.id, "puzzle")
            value.label += " (edited)"
            try transaction.save(value)
        }
        XCTAssertEqual(try store.read { try $0.get("vocabulary", "other").data }, ["label": "the real other"])
        XCTAssertEqual(try store.read { try $0.get("vocabulary", "puzzle").data }, ["label": "planted (edited)"],
                       "the save wrote its own record, without the data's id member")
    }

    func testTheIDIsNeverWrittenIntoData() throws {
        struct Renamed: ConcordRecord {
            static let kind = SymbolRecord.kind
            var id: String
            var label: String
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode("someone-else", forKey: .id)
                try container.encode(label, forKey: .label)
            }
        }
        let store = try makeStore()
        try store.write { try $0.save(Renamed(id: "mine", label: "x")) }
        XCTAssertEqual(try store.read { try $0.get("vocabulary", "mine").data }, ["label": "x"])
    }

    func testSwappedElementsWithoutIDsKeepTheirOwnUnknownFields() throws {
        let read = try linesAfter([line("a"), line("b")]) { $0.swapAt(0, 1) }
        XCTAssertEqual(read, [["text": "b", "color": "color-b"], ["text": "a", "color": "color-a"]])
    }

    func testRemovingAndAddingElementsWithoutIDsMovesNoFields() throws {
        let read = try linesAfter([line("first"), line("second")]) { lines in
            lines.removeFirst()
            lines.append(LineV1(text: "third"))
        }
        XCTAssertEqual(read, [["text": "second", "color": "color-second"], ["text": "third"]], "second keeps its own color; third has none")
    }

    func testAnEditedElementWithoutIDLosesItsUnknownFields() throws {
        let read = try linesAfter([line("a"), line("b"), line("c")]) { $0[1].text = "B" }
        XCTAssertEqual(read, [["text": "a", "color": "color-a"], ["text": "B"], ["text": "c", "color": "color-c"]],
                       "an edited element without id is not recognised: it keeps no unknown fields, never another's")
    }

    func testAmbiguousElementsWithoutIDsKeepNoUnknownFields() throws {
        let ambiguous = try linesAfter([LineV2(text: "a", color: "red"), LineV2(text: "a", color: "blue")]) { $0.removeLast() }
        XCTAssertEqual(ambiguous, [["text": "a"]], "two stored elements differ only in unknown fields: neither is chosen")
    }

    func testDuplicateElementsWithoutIDsPairOneToOne() throws {
        let duplicates = try linesAfter([line("a"), line("a")]) { $0.append(LineV1(text: "a")) }
        XCTAssertEqual(duplicates, [["text": "a", "color": "color-a"], ["text": "a", "color": "color-a"], ["text": "a"]],
                       "identical stored elements pair with equal new ones one to one")
    }

    func testASetSavedByTheOlderTypeKeepsEachElementsFields() throws {
        let store = try makeStore()
        let tags = Set(["a", "b", "c", "d", "e", "f"].map(line))
        try store.write { try $0.save(NoteV2(id: "n", lines: [], tags: tags)) }
        try store.write { transaction in
            var old = try XCTUnwrap(try transaction.fetch(NoteV1.self, id: "n"))
            old.tags.remove(LineV1(text: "f"))
            old.tags.insert(LineV1(text: "g"))
            try transaction.save(old)
        }
        let stored = try XCTUnwrap(try store.read { try $0.get("vocabulary", "n").data?["tags"]?.arrayValue })
        XCTAssertEqual(stored.count, 6)
        for tag in stored {
            let text = try XCTUnwrap(tag["text"]?.stringValue)
            XCTAssertEqual(tag["color"], text == "g" ? nil : .string("color-" + text), "\(tag)")
        }
    }

    func testIntegersFromNumbersWithAFractionOrExponentOnlyWhenExact() throws {
        let decoder = JSONValueDecoder()
        for (lexeme, value) in [("3.0", 3), ("1e3", 1000), ("1E+2", 100), ("-2.50e1", -25), ("-0.0", 0), ("0e5", 0),
                                ("12300e-2", 123), ("9007199254740993.0", 9_007_199_254_740_993)] {
            XCTAssertEqual(try decoder.decode(Int.self, from: .number(lexeme)), value, lexeme)
        }
        XCTAssertEqual(try decoder.decode(UInt64.self, from: .number("18446744073709551615.000")), .max)
        for lexeme in ["1.0000000000000001", "0.99999999999999999", "9007199254740992.5", "1.5", "1e-1", "-1e-400", "1e-99999999999"] {
            XCTAssertThrowsError(try decoder.decode(Int.self, from: .number(lexeme)), lexeme) { error in
                guard case DecodingError.typeMismatch = error else { return XCTFail("\(lexeme): \(error)") }
            }
        }
        for lexeme in ["1e19", "1e400", "1e99999999999", "300.0"] {
            XCTAssertThrowsError(try decoder.decode(Int8.self, from: .number(lexeme)), lexeme) { error in
                guard case DecodingError.dataCorrupted = error else { return XCTFail("\(lexeme): \(error)") }
            }
        }
        XCTAssertThrowsError(try decoder.decode(UInt.self, from: .number("-1.0")))
    }
}
