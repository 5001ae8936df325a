import XCTest

@testable import ConcordModel

final class RecordTests: XCTestCase {
    let stamp = HLC(wallMillis: 1_767_261_600_001, counter: 0)

    func live() throws -> Record {
        Record(
            id: try RecordID("hello"), kind: "vocabulary", device: "laptop", member: "ada", stamp: stamp,
            state: .live(data: ["label": "Hello", "order": 3]))
    }

    func testLiveEncoding() throws {
        XCTAssertEqual(
            text(try live().encoded()),
            """
            {
              "data": {
                "label": "Hello",
                "order": 3
              },
              "device": "laptop",
              "id": "hello",
              "kind": "vocabulary",
              "updatedAt": "2026-01-01T10:00:00.001Z-0000",
              "updatedBy": "ada"
            }

            """)
    }

    /// `encoded()` writes the envelope directly; it must stay byte for byte the canonical form of
    /// `jsonValue`, for live records with any data and for tombstones.
    func testEncodedIsTheCanonicalFormOfTheJSONValue() throws {
        let datas: [[String: JSONValue]] = [
            [:], ["label": "Hello", "order": 3],
            ["nested": .object(["z": .array([.null, .bool(true), .number("-1.5e3"), .object([:]), .array([])]), "a": "é 漢字 \u{1F600}"])],
            ["quote\"back\\slash": "tab\tnew\nline\u{01}", "": "empty key", "Zed": "upper sorts first", "zed": 1],
        ]
        var records = datas.map { data in
            Record(id: try! RecordID("r-1.x_y"), kind: "vocabulary", device: "dev \"1\"", member: "ada", stamp: stamp, state: .live(data: data))
        }
        records.append(Record(id: try RecordID("gone"), kind: "scenes", device: "laptop", member: "bob", stamp: stamp, state: .deleted))
        // Field stamps and a remembered delete, with names that need escaping, are written directly too.
        let earlier = HLC(wallMillis: 1_767_261_500_000, counter: 7), earliest = HLC(wallMillis: 1_767_261_400_000, counter: 0)
        let deleted = WriteStamp(at: earliest, member: "ada \"x\"", device: "d\\1\n")
        for data in datas {
            var stamps = [String: WriteStamp]()
            for (offset, key) in (Array(data.keys) + ["removed", "gone\t\"é\""]).enumerated() {
                stamps[key] = WriteStamp(at: earlier, member: offset % 2 == 0 ? "ada" : "bo\u{01}b", device: "tab \"2\"")
            }
            let variants: [([String: WriteStamp], WriteStamp?)] = [
                (stamps, nil), (stamps, deleted), ([:], deleted), (["only": WriteStamp(at: earlier, member: "ada", device: "x")], nil),
            ]
            for (fieldStamps, lastDeleted) in variants {
                records.append(Record(id: try RecordID("r-2"), kind: "vocabulary", device: "dev \"1\"", member: "ada", stamp: stamp,
                                      state: .live(data: data), fieldStamps: fieldStamps, lastDeleted: lastDeleted))
            }
        }
        for record in records {
            XCTAssertEqual(text(record.encoded()), text(record.jsonValue.canonicalBytes()))
            XCTAssertEqual(try Record.decode(record.encoded()), record)
        }
    }

    func testPeekStampReadsCanonicalFilesAndDeclinesOthers() throws {
        var record = try live()
        // Nested data with the same key names at a deeper indent must not be mistaken for the envelope.
        record.state = .live(data: ["updatedAt": "1999-01-01T00:00:00.000Z-0000", "deleted": true])
        let peeked = try XCTUnwrap(Record.peekStamp(record.encoded()))
        XCTAssertEqual(peeked.stamp, stamp)
        XCTAssertFalse(peeked.deleted)
        record.state = .deleted
        XCTAssertEqual(Record.peekStamp(record.encoded())?.deleted, true)
        XCTAssertEqual(Record.peekStamp(record.encoded())?.stamp, stamp)
        // Not canonical (one line): nil, so the caller decodes.
        XCTAssertNil(Record.peekStamp(Array(#"{"id":"hello","updatedAt":"2026-01-01T10:00:00.001Z-0000"}"#.utf8)))
        XCTAssertNil(Record.peekStamp(Array("{ nope\n".utf8)))
    }

    func testTombstoneEncoding() throws {
        var record = try live()
        record.state = .deleted
        XCTAssertTrue(record.isDeleted)
        XCTAssertNil(record.data)
        XCTAssertEqual(
            text(record.encoded()),
            """
            {
              "deleted": true,
              "deletedAt": "2026-01-01T10:00:00.001Z-0000",
              "deletedBy": "ada",
              "device": "laptop",
              "id": "hello",
              "kind": "vocabulary"
            }

            """)
    }

    func testRoundTrip() throws {
        var record = try live()
        XCTAssertEqual(try Record.decode(record.encoded()), record)
        XCTAssertEqual(try Record.decode(record.encoded()).data?["label"], "Hello")
        record.state = .deleted
        XCTAssertEqual(try Record.decode(record.encoded()), record)
        // Non-canonical but valid input decodes too.
        let compact = #"{"kind":"k","id":"x","device":"d","updatedBy":"m","updatedAt":"2026-01-01T10:00:00.001Z-0003","data":{}}"#
        let decoded = try Record.decode(Array(compact.utf8))
        XCTAssertEqual(decoded.stamp.counter, 3)
        XCTAssertEqual(decoded.data, [:])
    }

    func testDecodeErrors() throws {
        let good = try JSONValue.parse(try live().encoded()).objectValue ?? [:]
        func failure(_ edit: (inout [String: JSONValue]) -> Void) -> ModelError? {
            var fields = good
            edit(&fields)
            return modelError { () throws(ModelError) in try Record.decode(JSONValue.object(fields).canonicalBytes()) }
        }
        XCTAssertEqual(failure { $0["updatedAt"] = nil }, .malformedRecord(what: #"field "updatedAt""#, why: "is missing"))
        XCTAssertEqual(failure { $0["device"] = 1 }, .malformedRecord(what: #"field "device""#, why: "must be a string"))
        XCTAssertEqual(failure { $0["data"] = [] }, .malformedRecord(what: #"field "data""#, why: "must be an object"))
        XCTAssertEqual(
            failure { $0["color"] = "red" },
            .malformedRecord(
                what: #"field "color""#,
                why: "is not allowed in a live record (allowed: data, device, fields, id, kind, lastDeleted, updatedAt, updatedBy)"))
        if case .malformedRecord(let what, _) = failure({ $0["id"] = "a/b" }) {
            XCTAssertEqual(what, #"field "id""#)
        } else {
            XCTFail("bad id accepted")
        }
        XCTAssertNotNil(failure { $0["updatedAt"] = "yesterday" })
        XCTAssertNotNil(failure { $0["kind"] = "no such/kind" })
        XCTAssertEqual(
            failure { $0["deleted"] = false },
            .malformedRecord(what: #"field "deleted""#, why: "must be true (remove it for a live record)"))
        // A tombstone with data is rejected, naming the field.
        if case .malformedRecord(let what, _) = failure({ $0["deleted"] = true; $0["deletedAt"] = $0["updatedAt"] }) {
            XCTAssertEqual(what, #"field "data""#)
        } else {
            XCTFail("mixed record accepted")
        }
    }

    func testDecodeRejectsNonObjectsAndBadJSON() {
        XCTAssertEqual(modelError { () throws(ModelError) in try Record.decode(Array("[]".utf8)) }, .notAnObject(what: "record"))
        XCTAssertEqual(
            modelError { () throws(ModelError) in try Record.decode(Array("{".utf8)) },
            .invalidJSON(JSONParseError(line: 1, column: 2, message: "expected '\"' to begin an object key, or '}'")))
    }

    func testSizeLimit() {
        let big = [UInt8](repeating: 0x20, count: maxRecordBytes + 1)
        XCTAssertEqual(modelError { () throws(ModelError) in try Record.decode(big) }, .recordTooLarge(size: maxRecordBytes + 1))
    }

    /// The field-stamp example of docs/data-format.md, byte for byte, and back.
    func testFieldStampsExampleOfTheDataFormat() throws {
        let id = try RecordID("puzzle")
        let first = Record.written(["label": "puzzle"], over: nil, id: id, kind: "vocabulary", by: WriteStamp(
            at: try XCTUnwrap(HLC(parsing: "2026-01-01T14:30:00.000Z-0000")), member: "therapist", device: "ipad"))
        let second = Record.written(["label": "puzzle", "color": "red"], over: first, id: id, kind: "vocabulary", by: WriteStamp(
            at: try XCTUnwrap(HLC(parsing: "2026-01-01T15:10:00.000Z-0000")), member: "parent", device: "phone"))
        let expected = """
            {
              "data": {
                "color": "red",
                "label": "puzzle"
              },
              "device": "phone",
              "fields": {
                "label": {
                  "at": "2026-01-01T14:30:00.000Z-0000",
                  "by": "therapist",
                  "device": "ipad"
                }
              },
              "id": "puzzle",
              "kind": "vocabulary",
              "updatedAt": "2026-01-01T15:10:00.000Z-0000",
              "updatedBy": "parent"
            }

            """
        XCTAssertEqual(String(decoding: second.encoded(), as: UTF8.self), expected)
        XCTAssertEqual(try Record.decode(Array(expected.utf8)), second)
        // One put: no field stamps at all, the bytes of format 2.
        XCTAssertEqual(first.fieldStamps, [:])
        XCTAssertFalse(String(decoding: first.encoded(), as: UTF8.self).contains("fields"))
        // Removing the label lists it without a value; deleting and writing again remembers the delete.
        let removed = Record.written(["color": "red"], over: second, id: id, kind: "vocabulary", by: WriteStamp(
            at: try XCTUnwrap(HLC(parsing: "2026-01-01T15:20:00.000Z-0000")), member: "parent", device: "phone"))
        XCTAssertEqual(removed.data, ["color": "red"])
        XCTAssertEqual(removed.stamp(ofField: "label"), removed.envelope)
        XCTAssertEqual(removed.stamp(ofField: "color"), second.envelope)
        let tombstone = Record(id: id, kind: "vocabulary", device: "ipad", member: "therapist",
                               stamp: try XCTUnwrap(HLC(parsing: "2026-01-01T16:00:00.000Z-0000")), state: .deleted)
        let back = Record.written(["label": "again"], over: tombstone, id: id, kind: "vocabulary", by: WriteStamp(
            at: try XCTUnwrap(HLC(parsing: "2026-01-01T16:05:00.000Z-0000")), member: "parent", device: "phone"))
        XCTAssertEqual(back.lastDeleted, tombstone.envelope)
        XCTAssertEqual(try Record.decode(back.encoded()), back)
    }

    func testMalformedFieldStampsAreRefused() throws {
        func failure(_ json: String) -> String? {
            do {
                _ = try Record.decode(Array(json.utf8))
                return nil
            } catch {
                return error.errorDescription
            }
        }
        let envelope = #""device": "d", "id": "x", "kind": "k", "updatedAt": "2026-01-01T10:00:00.000Z-0000", "updatedBy": "m""#
        XCTAssertNotNil(failure(#"{"data": {"a": 1}, "fields": {"a": {"at": "2026-01-01T11:00:00.000Z-0000", "by": "m", "device": "d"}}, \#(envelope)}"#),
                        "a field written after the record")
        XCTAssertNotNil(failure(#"{"data": {"a": 1}, "fields": {"a": "2026-01-01T09:00:00.000Z-0000"}, \#(envelope)}"#))
        XCTAssertNotNil(failure(#"{"data": {}, "lastDeleted": {"at": "2026-01-01T10:00:00.000Z-0000", "by": "m", "device": "d"}, \#(envelope)}"#),
                        "a delete at the record's own stamp")
        XCTAssertNil(failure(#"{"data": {"a": 1}, "fields": {"b": {"at": "2026-01-01T09:00:00.000Z-0000", "by": "m", "device": "d"}}, \#(envelope)}"#))
    }
}
