import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Two versions of one app's record type on the same kind: the newer adds fields at every depth
/// (a top-level field, a field of a nested object, of an object nested in that, of the objects
/// in arrays); the older reads, changes and saves, and the newer's fields survive.
final class TypedRecordUnknownFieldsTests: KitTestCase {
    /// The newer version.
    struct CardV2: ConcordRecord, Equatable {
        static let kind = SymbolRecord.kind
        var id: String
        var label: String
        var note: String?
        var style: StyleV2
        var items: [ItemV2]
        var lines: [LineV2]
        var counts: [String: Int]
        var extra: String
    }
    struct StyleV2: Codable, Equatable { var color: String; var font: FontV2; var shadow: Bool }
    struct FontV2: Codable, Equatable { var name: String; var size: Int; var weight: Int }
    struct ItemV2: Codable, Equatable { var id: String; var text: String; var done: Bool }
    struct LineV2: Codable, Equatable { var text: String; var color: String }

    /// The older version: no `extra`, `shadow`, `font.weight`, `items[].done`, `lines[].color`.
    struct CardV1: ConcordRecord, Equatable {
        static let kind = SymbolRecord.kind
        var id: String
        var label: String
        var note: String?
        var style: StyleV1
        var items: [ItemV1]
        var lines: [LineV1]
        var counts: [String: Int]
    }
    struct StyleV1: Codable, Equatable { var color: String; var font: FontV1 }
    struct FontV1: Codable, Equatable { var name: String; var size: Int }
    struct ItemV1: Codable, Equatable { var id: String; var text: String }
    struct LineV1: Codable, Equatable { var text: String }

    private let card = CardV2(
        id: "c", label: "card", note: "a note",
        style: StyleV2(color: "red", font: FontV2(name: "Inter", size: 12, weight: 700), shadow: true),
        items: [ItemV2(id: "i1", text: "one", done: true), ItemV2(id: "i2", text: "two", done: false)],
        lines: [LineV2(text: "first", color: "blue"), LineV2(text: "second", color: "green")],
        counts: ["a": 1, "b": 2], extra: "from v2")

    /// Saves `card` as v2, then has v1 fetch it, apply `change`, and save it; returns what v2 reads then.
    private func roundTrip(_ change: @escaping @Sendable (inout CardV1) -> Void) throws -> CardV2? {
        let store = try makeStore()
        let card = card
        try store.write { try $0.save(card) }
        try store.write { transaction in
            var old = try XCTUnwrap(try transaction.fetch(CardV1.self, id: "c"))
            change(&old)
            try transaction.save(old)
        }
        return try store.read { try $0.fetch(CardV2.self, id: "c") }
    }

    func testAnOlderVersionsEditKeepsTheNewerFieldsAtEveryDepth() throws {
        let read = try roundTrip { old in
            old.label = "edited"
            old.note = nil
            old.style.font.size = 14
            old.style.color = "black"
            old.items.reverse()
            old.items[0].text = "TWO"
            old.lines.reverse()
            old.counts["a"] = nil
            old.counts["c"] = 3
        }
        var expected = card
        expected.label = "edited"
        expected.note = nil
        expected.style.font.size = 14
        expected.style.color = "black"
        expected.items = [ItemV2(id: "i2", text: "TWO", done: false), ItemV2(id: "i1", text: "one", done: true)]
        expected.lines.reverse()
        expected.counts = ["b": 2, "c": 3]
        XCTAssertEqual(read, expected, """
            kept: extra (top level), style.shadow (one level down), style.font.weight (two levels down), items[].done (matched \
            by id after reordering), lines[].color (unchanged elements without id matched by their known part after reordering); removed: note (an optional set to nil), \
            counts.a (a dictionary owns its keys)
            """)
    }

    func testElementsAddedByTheOlderVersionHaveNoUnknownFields() throws {
        let store = try makeStore()
        let card = card
        try store.write { try $0.save(card) }
        try store.write { transaction in
            var old = try XCTUnwrap(try transaction.fetch(CardV1.self, id: "c"))
            old.lines.append(LineV1(text: "third"))
            old.items.append(ItemV1(id: "i3", text: "three"))
            try transaction.save(old)
        }
        let data = try store.read { try $0.get("vocabulary", "c").data }
        XCTAssertEqual(data?["lines"], [["text": "first", "color": "blue"], ["text": "second", "color": "green"], ["text": "third"]],
                       "unchanged elements without ids keep their fields (matched by their known part); a new one has none")
        XCTAssertEqual(data?["items"], [["id": "i1", "text": "one", "done": true], ["id": "i2", "text": "two", "done": false],
                                        ["id": "i3", "text": "three"]], "elements with ids keep their fields; a new one has none")
        XCTAssertEqual(data?["extra"], "from v2")
        let path = RecordPaths.file(directory: "vocabulary", id: "c")
        XCTAssertEqual(concordError { try store.read { try $0.fetch(CardV2.self, id: "c") } },
                       .recordDoesNotDecode(path: path, reason: "at items[2].done: missing"), "v1's new item has no done, nor its new line a color")
    }

    func testTheMergeRules() throws {
        let stored: JSONValue = ["a": 1, "unknown": ["deep": true], "object": ["known": 1, "other": 2], "gone": "x",
                                 "list": [["id": 1, "k": 1, "u": 1], ["id": 2, "k": 2, "u": 2]]]
        let (_, shape) = try JSONValueDecoder().decodeReading(Known.self, from: stored)
        let new: JSONValue = ["a": 2, "object": ["known": 5], "list": [["id": 2, "k": 20], ["id": 3, "k": 30]]]
        XCTAssertEqual(UnknownFields.merge(new, over: stored, shape: shape),
                       ["a": 2, "unknown": ["deep": true], "object": ["known": 5, "other": 2],
                        "list": [["id": 2, "k": 20, "u": 2], ["id": 3, "k": 30]]])
        let twins: JSONValue = ["a": 1, "object": ["known": 1], "list": [["id": 1, "k": 1, "u": 1], ["id": 1, "k": 2, "u": 2]]]
        let (_, twinsShape) = try JSONValueDecoder().decodeReading(Known.self, from: twins)
        XCTAssertEqual(UnknownFields.merge(["a": 1, "object": ["known": 1], "list": [["id": 1, "k": 2], ["id": 1, "k": 3]]],
                                           over: twins, shape: twinsShape),
                       ["a": 1, "object": ["known": 1], "list": [["id": 1, "k": 2, "u": 2], ["id": 1, "k": 3]]],
                       "ids not unique: matched by known part; the edited element has no unknown members")
        let (_, numbers) = try JSONValueDecoder().decodeReading([Int].self, from: [1, 2])
        XCTAssertEqual(UnknownFields.matching([1, 2, 3], [1, 2], shape: numbers), [0: 0, 1: 1])
    }

    /// Reads `a`, `gone` (if present), `object.known`, and `list[].id`, `list[].k`.
    private struct Known: Decodable {
        var a: Int
        var gone: String?
        var object: Inner
        var list: [Element]
        struct Inner: Decodable { var known: Int }
        struct Element: Decodable { var id: Int; var k: Int }
    }
}
