import XCTest

@testable import ConcordModel

final class JSONReaderTests: XCTestCase {
    /// Rebuilds a document through the reader's object, array and string reads.
    private static func walk(_ reader: inout JSONReader) throws -> JSONValue {
        switch reader.nextType {
        case .object:
            var members = [String: JSONValue]()
            try reader.readObject { key, reader in members[key] = try walk(&reader) }
            return .object(members)
        case .array:
            var elements = [JSONValue]()
            try reader.readArray { _, reader in elements.append(try walk(&reader)) }
            return .array(elements)
        case .string:
            return .string(try reader.readString())
        default:
            return try reader.readValue()
        }
    }

    /// Read piece by piece, a document gives the value `parse` gives, or the same error; and one
    /// whose every value is left unread (so skipped) fails exactly where `parse` fails.
    func testReadingPieceByPieceMatchesParse() {
        var random = SplitMix64(seed: 11)
        for _ in 0..<300 {
            let document = Array(JSONTranscoderTests.randomText(depth: 0, using: &random).utf8)
            var changed = document
            if !changed.isEmpty {
                changed[Int.random(in: 0..<changed.count, using: &random)] = Array(#"{}[]",:\ax0"#.utf8).randomElement(using: &random)!
            }
            for input in [document, changed, Array(document.dropLast())] {
                let parsed = Result { () throws(JSONParseError) in try JSONValue.parse(input) }
                let walked = Result { try JSONReader.read(input) { reader in try Self.walk(&reader) } }
                let skipped = Result { try JSONReader.read(input) { reader in try reader.skipValue() } }
                switch (parsed, walked) {
                case (.success(let a), .success(let b)): XCTAssertEqual(b, a, text(input))
                case (.failure(let a), .failure(let b)): XCTAssertEqual(b as? JSONParseError, a, text(input))
                default: XCTFail("\(text(input)): parse \(parsed), reader \(walked)")
                }
                XCTAssertEqual((try? skipped.get()) != nil, (try? parsed.get()) != nil, text(input))
            }
        }
    }

    func testUnreadMembersAreSkippedButStillChecked() throws {
        let keys = try JSONReader.read(Array(#"{"a": [1, {"b": 2}], "c": "x", "d": {}}"#.utf8)) { reader -> [String] in
            var keys = [String]()
            try reader.readObject { key, _ in keys.append(key) }
            return keys
        }
        XCTAssertEqual(keys, ["a", "c", "d"])
        XCTAssertThrowsError(try JSONReader.read(Array(#"{"a": [1, {"b" 2}]}"#.utf8)) { reader in try reader.readObject { _, _ in } }) { error in
            XCTAssertEqual((error as? JSONParseError)?.message, "expected ':' after object key")
        }
        XCTAssertThrowsError(try JSONReader.read(Array(#"{"a": 1, "a": 2}"#.utf8)) { reader in try reader.readObject { _, _ in } }) { error in
            XCTAssertEqual((error as? JSONParseError)?.description, #"line 1, column 10: duplicate key "a" in object"#)
        }
    }

    func testCanonicalReadsIndentAsTheyWouldInsideARecord() throws {
        let data = try JSONReader.read(Array(#"{"b": [1], "a": {"y": null, "x": "é"}}"#.utf8)) { reader in try reader.readCanonical(indent: 1) }
        XCTAssertEqual(data, Record.canonicalData(["a": ["x": "é", "y": nil], "b": [1]]))
        XCTAssertEqual(text(data), "{\n    \"a\": {\n      \"x\": \"é\",\n      \"y\": null\n    },\n    \"b\": [\n      1\n    ]\n  }")
    }

    func testReadsOfTheWrongTypeNameWhatWasFound() {
        XCTAssertThrowsError(try JSONReader.read(Array(#"{"a": 1}"#.utf8)) { reader in try reader.readArray { _, _ in } }) { error in
            XCTAssertEqual((error as? JSONParseError)?.description, "line 1, column 1: expected an array, found an object")
        }
        XCTAssertThrowsError(try JSONReader.read(Array(#"[1] x"#.utf8)) { reader in try reader.skipValue() }) { error in
            XCTAssertEqual((error as? JSONParseError)?.message, "unexpected character 'x' after the JSON value")
        }
    }
}
