import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Typed records: Codable values as canonical JSON (the bytes the CLI writes), typed save, fetch,
/// delete and append, the declared kind checked against the profile's, and records that do not
/// decode reported by file and coding path, or skipped on request.
final class TypedRecordTests: KitTestCase {
    private func fileBytes(_ store: ConcordStore, _ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: store.directory.appendingPathComponent(path)))
    }

    private let specimen = SpecimenRecord(
        id: "s1", big: .max, huge: .max, small: -8, fraction: 0.1, large: 1e20, negativeZero: -0.0, single: 0.25,
        when: Date(timeIntervalSince1970: 1_767_225_600), blob: Data([0, 1, 2, 250]), link: URL(string: "https://example.org/a?b=c")!,
        amount: Decimal(string: "12.50")!, missing: nil, nested: ["b": [2, 1], "a": []], flags: [true, false], text: "tab\t\"é\"")

    private var specimenData: [String: JSONValue] {
        ["big": .number("9223372036854775807"), "huge": .number("18446744073709551615"), "small": -8, "fraction": .number("0.1"),
         "large": .number("1e+20"), "negativeZero": .number("-0.0"), "single": .number("0.25"), "when": "2026-01-01T00:00:00.000Z",
         "blob": "AAEC+g==", "link": "https://example.org/a?b=c", "amount": .number("12.5"), "nested": ["b": [2, 1], "a": []],
         "flags": [true, false], "text": "tab\t\"é\""]
    }

    func testValuesEncodeAsDocumentedAndDecodeBack() throws {
        var expected = specimenData
        expected["id"] = "s1"
        XCTAssertEqual(try JSONValueEncoder().encode(specimen), .object(expected))
        XCTAssertEqual(try JSONValueDecoder().decode(SpecimenRecord.self, from: .object(expected)), specimen)
        XCTAssertEqual(try TypedCoding.data(of: specimen), specimenData, "the id is the record's, not a data field")

        XCTAssertThrowsError(try JSONValueEncoder().encode(["x": Double.nan])) { XCTAssertTrue($0 is EncodingError) }
        XCTAssertThrowsError(try JSONValueEncoder().encode([Double.infinity]))
        // Integers read from integral numbers written otherwise; a fraction is a type mismatch.
        XCTAssertEqual(try JSONValueDecoder().decode([Int].self, from: [.number("3.0"), .number("1e3"), .number("-0")]), [3, 1000, 0])
        XCTAssertEqual(try JSONValueDecoder().decode(Date.self, from: "2026-01-01T02:00:00+02:00"), Date(timeIntervalSince1970: 1_767_225_600))
        let fraction = concordError { try TypedCoding.decode(SymbolRecord.self, data: ["label": "x", "page": .number("3.5"), "position": 1], id: "x", path: "p") }
        XCTAssertEqual(fraction, .recordDoesNotDecode(path: "p", reason: "at page: expected an integer, found the number 3.5"))
    }

    /// A `JSONValue` inside an `Encodable` value encodes as itself: exactly (a number's lexeme, an
    /// explicit null) through `JSONValueEncoder`, and as plain JSON through Foundation's encoder.
    func testAJSONValueFieldEncodesAsItself() throws {
        struct Holder: Encodable { let free: JSONValue; let absent: JSONValue? }
        let free: JSONValue = ["price": .number("1.50"), "tags": ["a", .null], "ok": true, "n": .number("-0")]
        XCTAssertEqual(try JSONValueEncoder().encode(Holder(free: free, absent: nil)), .object(["free": free]))
        let foundation = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Holder(free: free, absent: .null))) as? NSDictionary
        XCTAssertEqual(foundation, ["free": ["price": 1.5, "tags": ["a", NSNull()], "ok": true, "n": 0], "absent": NSNull()] as NSDictionary)
    }

    func testNumbersSurviveCanonicalJSONExactly() throws {
        var random = SeededGenerator(seed: 3434)
        for _ in 0..<500 {
            let double = Double(bitPattern: random.next())
            let values = Numbers(double: double.isFinite ? double : 1, float: Float(bitPattern: UInt32(truncatingIfNeeded: random.next())),
                                 signed: Int64(bitPattern: random.next()), unsigned: random.next())
            guard values.float.isFinite else { continue }
            let encoded = try JSONValueEncoder().encode(values)
            let reparsed = try JSONValue.parse(encoded.canonicalBytes())
            XCTAssertEqual(reparsed, encoded, "canonical JSON keeps the lexemes")
            let decoded = try JSONValueDecoder().decode(Numbers.self, from: reparsed)
            XCTAssertEqual(decoded.double.bitPattern, values.double.bitPattern, "\(values.double)")
            XCTAssertEqual(decoded.float.bitPattern, values.float.bitPattern, "\(values.float)")
            XCTAssertEqual(decoded.signed, values.signed)
            XCTAssertEqual(decoded.unsigned, values.unsigned)
        }
    }

    func testADecodingFailureNamesTheCodingPath() throws {
        let data: [String: JSONValue] = ["label": "x", "page": 3, "position": 1, "weight": "heavy"]
        let error = concordError { try TypedCoding.decode(SymbolRecord.self, data: data, id: "x", path: "vocabulary/x.json") }
        XCTAssertEqual(error, .recordDoesNotDecode(path: "vocabulary/x.json", reason: "at weight: expected a number, found a string"))
        let nested = concordError { try TypedCoding.decode(SpecimenRecord.self, data: specimenData.merging(["nested": ["a": [1, "two"]]]) { $1 },
                                                            id: "s1", path: "p") }
        XCTAssertEqual(nested, .recordDoesNotDecode(path: "p", reason: "at nested.a[1]: expected a number, found a string"))
        let missing = concordError { try TypedCoding.decode(SymbolRecord.self, data: ["label": "x", "page": 3], id: "x", path: "p") }
        XCTAssertEqual(missing, .recordDoesNotDecode(path: "p", reason: "at position: missing"))
        XCTAssertEqual(missing?.localizedDescription.contains("p does not decode as this app's type: at position: missing"), true)
    }

    func testSaveWritesTheBytesPutWrites() throws {
        let alice = try makeIdentity()
        let typed = try makeStore("typed", identity: alice), plain = try makeStore("plain", identity: alice)
        let symbol = SymbolRecord(id: "puzzle", label: "puzzle", page: 3, position: 2, weight: 0.1, hidden: true, note: "n")
        try typed.write { try $0.save(symbol) }
        let specimen = specimen, specimenData = specimenData
        try typed.write { try $0.save(specimen) }
        try plain.write { try $0.put("vocabulary", "puzzle", data: ["label": "puzzle", "page": 3, "position": 2, "weight": .number("0.1"),
                                                                   "hidden": true, "note": "n"]) }
        try plain.write { try $0.put("vocabulary", "s1", data: specimenData) }
        for id in ["puzzle", "s1"] {
            let path = RecordPaths.file(directory: "vocabulary", id: id)
            XCTAssertEqual(String(decoding: try fileBytes(typed, path), as: UTF8.self), String(decoding: try fileBytes(plain, path), as: UTF8.self))
        }
        let text = String(decoding: try fileBytes(typed, RecordPaths.file(directory: "vocabulary", id: "puzzle")), as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("{\n  \"data\": {\n    \"hidden\": true,\n    \"label\": \"puzzle\",\n    \"note\": \"n\","), text)
    }

    func testSaveFetchDeleteThroughTheStore() throws {
        let store = try makeStore()
        let written = try store.write { try $0.save(SymbolRecord(id: "puzzle", label: "puzzle", page: 3, position: 2)) }
        XCTAssertEqual(written.changes.map(\.reference), ["vocabulary/puzzle"])
        let fetched = try store.read { try $0.fetch(SymbolRecord.self, id: "puzzle") }
        XCTAssertEqual(fetched, SymbolRecord(id: "puzzle", label: "puzzle", page: 3, position: 2))
        XCTAssertEqual(try store.read { try $0.get("vocabulary", "puzzle").data }, ["label": "puzzle", "page": 3, "position": 2,
                                                                                  "weight": .number("1.5"), "hidden": false])
        XCTAssertNil(try store.read { try $0.fetch(SymbolRecord.self, id: "nothing") })

        // Read-modify-write inside one transaction; saving what is stored changes nothing.
        try store.write { transaction in
            var symbol = try XCTUnwrap(try transaction.fetch(SymbolRecord.self, id: "puzzle"))
            symbol.note = "renamed"
            try transaction.save(symbol)
            XCTAssertEqual(try transaction.fetch(SymbolRecord.self, id: "puzzle")?.note, "renamed")
        }
        let again = try store.write { transaction in try transaction.save(try XCTUnwrap(try transaction.fetch(SymbolRecord.self, id: "puzzle"))) }
        XCTAssertNil(again.commit, "saving the stored value again writes nothing")

        try store.write { try $0.save(SymbolRecord(id: "apple", label: "apple", page: 1, position: 1)) }
        XCTAssertEqual(try store.read { try $0.fetchAll(SymbolRecord.self).map(\.id) }, ["apple", "puzzle"])
        try store.write { try $0.delete(SymbolRecord.self, id: "apple") }
        try store.write { transaction in try transaction.delete(try XCTUnwrap(try transaction.fetch(SymbolRecord.self, id: "puzzle"))) }
        XCTAssertEqual(try store.read { try $0.fetchAll(SymbolRecord.self) }, [])
        XCTAssertNil(try store.read { try $0.fetch(SymbolRecord.self, id: "puzzle") })
        XCTAssertEqual(concordError { try store.write { try $0.delete(SymbolRecord.self, id: "puzzle") } }, .recordNotFound("vocabulary/puzzle"))
        XCTAssertEqual(concordError { try store.write { try $0.save(SymbolRecord(id: "../x", label: "", page: 0, position: 0)) } }?.isInvalidInput, true)
    }

    func testAKindDeclaredOtherwiseIsRefusedForWritesAndReadsStill() throws {
        let store = try makeStore()
        try store.write { try $0.put("vocabulary", "a", data: ["label": "a"]) }
        let profileKind = try XCTUnwrap(store.kinds.kind(named: "vocabulary"))
        let differences = MisdeclaredRecord.kind.differences(from: profileKind)
        XCTAssertEqual(differences, ["policy is lww in the profile, delete-wins here", "writers are editor in the profile, admin here"])
        let differs = ConcordError.kindDiffers(kind: "vocabulary", differences: differences)
        XCTAssertEqual(concordError { try store.write { try $0.save(MisdeclaredRecord(id: "b", label: "b")) } }, differs)
        XCTAssertEqual(concordError { try store.write { try $0.delete(MisdeclaredRecord.self, id: "a") } }, differs)
        XCTAssertEqual(try store.read { try $0.fetch(MisdeclaredRecord.self, id: "a")?.label }, "a", "reading needs only the kind's name")

        let unknown = ConcordError.unknownKind("stickers", known: store.kinds.kinds.map(\.name))
        XCTAssertEqual(concordError { try store.write { try $0.save(StrangerRecord(id: "s")) } }, unknown)
        XCTAssertEqual(concordError { try store.read { try $0.fetchAll(StrangerRecord.self) } }, unknown)
        XCTAssertEqual(try store.read { try $0.list(kind: "vocabulary").items.map(\.id) }, ["a"], "nothing was written")
    }

    func testARecordThatDoesNotDecodeIsAnErrorNamingItsFileOrIsSkippedOnRequest() throws {
        let store = try makeStore()
        try store.write { try $0.save(SymbolRecord(id: "good", label: "good", page: 1, position: 1)) }
        try store.write { try $0.put("vocabulary", "bad", data: ["label": 7, "page": 1, "position": 2]) }
        let path = RecordPaths.file(directory: "vocabulary", id: "bad")
        let undecodable = UndecodableRecord(path: path, reason: "at label: expected a string, found the number 7")
        XCTAssertEqual(concordError { try store.read { try $0.fetch(SymbolRecord.self, id: "bad") } }, undecodable.error)
        XCTAssertEqual(concordError { try store.read { try $0.fetchAll(SymbolRecord.self) } }, undecodable.error, "never dropped by default")
        XCTAssertEqual(concordError { try store.read { try SymbolRecord.filter(\.page == 1).fetchAll($0) } }, undecodable.error)
        XCTAssertEqual(try store.read { try $0.fetchAll(SymbolRecord.self, undecodable: .skip).map(\.id) }, ["good"])
        let decoded = try store.read { try SymbolRecord.all().fetchDecoded($0) }
        XCTAssertEqual(decoded.records.map(\.id), ["good"])
        XCTAssertEqual(decoded.undecodable, [undecodable])
        XCTAssertEqual(try store.read { try SymbolRecord.all().fetchCount($0) }, 2, "a count does not decode")
        XCTAssertEqual(concordError { try store.write { try $0.save(SymbolRecord(id: "bad", label: "fixed", page: 1, position: 2)) } },
                       undecodable.error, "saving over what does not decode would lose or keep fields blindly")
        try store.write { transaction in
            try transaction.delete(SymbolRecord.self, id: "bad")
            try transaction.save(SymbolRecord(id: "bad", label: "fixed", page: 1, position: 2))
        }
        XCTAssertEqual(try store.read { try $0.fetchAll(SymbolRecord.self).map(\.label) }, ["fixed", "good"])
    }

    func testTypedLogEntries() throws {
        let store = try makeStore()
        let first = try store.write { try $0.append(UsageEntry(word: "puzzle", count: 2)) }.value
        try store.write { try $0.append(UsageEntry(word: "apple", count: 1), id: "fixed") }
        try store.write { try $0.append(UsageEntry(word: "apple", count: 1), id: "fixed") }
        let entries = try store.read { try $0.logEntries(UsageEntry.self) }
        XCTAssertEqual(entries.map(\.value), [UsageEntry(word: "puzzle", count: 2), UsageEntry(word: "apple", count: 1)], "the same id appends once")
        XCTAssertEqual(entries.map(\.id), [first, try RecordID("fixed")])
        XCTAssertEqual(entries.first?.entry.data, ["word": "puzzle", "count": 2])
        XCTAssertEqual(entries.first?.written.member, "alice")

        try store.write { try $0.append("logs", data: ["word": "x"], id: "broken") }
        let path = "logs/2026-01-01.jsonl"
        let broken = UndecodableRecord(path: path, reason: "entry broken: at count: missing")
        XCTAssertEqual(concordError { try store.read { try $0.logEntries(UsageEntry.self) } }, broken.error)
        XCTAssertEqual(try store.read { try $0.logEntries(UsageEntry.self, undecodable: .skip).count }, 2)
        XCTAssertEqual(try store.read { try $0.decodedLogEntries(UsageEntry.self).undecodable }, [broken])
        XCTAssertEqual(concordError { try store.write { try $0.save(MisfiledRecord(id: "x")) } }, .logKindNeedsAppend("logs"))
        XCTAssertEqual(concordError { try store.write { try $0.append(MisdeclaredEntry(word: "x")) } },
                       .kindDiffers(kind: "logs", differences: ["writers are user in the profile, editor here"]))
    }
}

/// A record type declared on a log kind: `save` is refused as `put` refuses it.
private struct MisfiledRecord: ConcordRecord {
    static let kind = UsageEntry.kind
    var id: String
}

/// Numbers of every width, for the round trip through canonical JSON.
private struct Numbers: Codable {
    var double: Double
    var float: Float
    var signed: Int64
    var unsigned: UInt64
}

/// The log kind declared with other writers.
private struct MisdeclaredEntry: ConcordLogEntry {
    static let kind = Kind("logs", policy: .append, writers: .editor)
    var word: String
}

private extension ConcordError {
    var isInvalidInput: Bool { if case .invalidInput = self { true } else { false } }
}
