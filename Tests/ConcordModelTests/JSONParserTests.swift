import Foundation
import XCTest

@testable import ConcordModel

final class JSONParserTests: XCTestCase {
    func testParsesAllValueKinds() throws {
        let value = try JSONValue.parse(" {\"a\": [true, false, null, -1.5e-3, \"s\"], \"b\": {}}\r\n\t")
        XCTAssertEqual(value, ["a": [true, false, nil, .number("-1.5e-3"), "s"], "b": [:]])
    }

    func testParsesFromByteCollections() throws {
        let bytes = Array(#"{"k":"v"}"#.utf8)
        XCTAssertEqual(try JSONValue.parse(bytes), ["k": "v"])
        XCTAssertEqual(try JSONValue.parse(bytes[...]), ["k": "v"])
        XCTAssertEqual(try JSONValue.parse(Data(bytes)), ["k": "v"])
        // A non-contiguous collection takes the copying path.
        XCTAssertEqual(try JSONValue.parse(bytes.lazy.map { $0 }), ["k": "v"])
    }

    func testTrailingCommaInObject() {
        let error = parseFailure("{\n  \"a\": 1,\n}")
        XCTAssertEqual(error?.line, 3)
        XCTAssertEqual(error?.column, 1)
        XCTAssertEqual(error?.message, "expected an object key after ','; trailing commas are not allowed")
    }

    func testTrailingCommaInArray() {
        let error = parseFailure("[1,2,]")
        XCTAssertEqual(error.map { [$0.line, $0.column] }, [1, 6])
    }

    func testMissingComma() {
        let error = parseFailure("{\n  \"a\": 1\n  \"b\": 2\n}")
        XCTAssertEqual(error?.description, "line 3, column 3: expected ',' or '}' after object member")
    }

    func testUnterminatedString() {
        let error = parseFailure("[\"abc")
        XCTAssertEqual(error?.message, "unterminated string")
        XCTAssertEqual(error?.column, 2)
    }

    func testDuplicateKey() {
        let error = parseFailure("{\"a\": 1, \"a\": 2}")
        XCTAssertEqual(error?.message, "duplicate key \"a\" in object")
        XCTAssertEqual(error?.column, 10)
    }

    func testTrailingGarbage() {
        let error = parseFailure("{} x")
        XCTAssertEqual(error?.description, "line 1, column 4: unexpected character 'x' after the JSON value")
        XCTAssertNotNil(parseFailure("1 2"))
        XCTAssertNotNil(parseFailure("{}{}"))
    }

    func testBadEscapes() {
        let error = parseFailure(#"["ab\x"]"#)
        XCTAssertEqual(error?.column, 5)
        XCTAssertTrue(error?.message.hasPrefix("invalid escape '\\x'") ?? false, error?.message ?? "")
        XCTAssertNotNil(parseFailure(#""\u12G4""#))
        XCTAssertNotNil(parseFailure(#""\u12""#))
        XCTAssertNotNil(parseFailure(#""\"#))
    }

    func testLoneSurrogates() {
        XCTAssertTrue(parseFailure(#""\ud800""#)?.message.hasPrefix("lone surrogate \\uD800") ?? false)
        XCTAssertTrue(parseFailure(#""\udc00""#)?.message.hasPrefix("lone surrogate \\uDC00") ?? false)
        XCTAssertNotNil(parseFailure(#""\ud800\u0041""#))
        XCTAssertNotNil(parseFailure(#""\ud800x""#))
    }

    func testControlCharactersInStrings() {
        let error = parseFailure("\"a\tb\"")
        XCTAssertEqual(error?.column, 3)
        XCTAssertTrue(error?.message.hasPrefix("control character U+0009") ?? false)
        XCTAssertNotNil(parseFailure("\"a\nb\""))
    }

    func testInvalidUTF8() {
        let cases: [[UInt8]] = [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xE6, 0x97, 0x22], [0x22, 0xE6],
        ]
        for bytes in cases {
            XCTAssertThrowsError(try JSONValue.parse(bytes), "\(bytes)")
        }
        XCTAssertEqual(try JSONValue.parse([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22]), "😀")
    }

    func testByteOrderMarkRejected() {
        XCTAssertThrowsError(try JSONValue.parse([0xEF, 0xBB, 0xBF, 0x31]))
    }

    func testNumberGrammar() {
        for bad in ["01", "-", "1.", ".5", "1e", "1e+", "+1", "-01", "0x10", "NaN", "Infinity", "1.e3"] {
            XCTAssertNotNil(parseFailure(bad), bad)
        }
        for good in ["0", "-0", "0.5", "10", "1e5", "1E-5", "-12.34e+56"] {
            XCTAssertEqual(try JSONValue.parse(good), .number(good))
        }
    }

    func testLiteralsAndEmptyInput() {
        for bad in ["", "   ", "tru", "nul", "True", "[", "{", "{\"a\"}", "{\"a\":}", "{1:2}", "'a'"] {
            XCTAssertNotNil(parseFailure(bad), bad)
        }
        XCTAssertEqual(parseFailure("")?.message, "unexpected end of input; expected a value")
    }

    func testNestingLimit() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        XCTAssertNoThrow(try JSONValue.parse(ok))
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let error = parseFailure(deep)
        XCTAssertEqual(error?.column, 513)
        XCTAssertEqual(error?.message, "nesting deeper than 512 levels")
        let deepObjects = String(repeating: "{\"a\":", count: 600) + "1" + String(repeating: "}", count: 600)
        XCTAssertNotNil(parseFailure(deepObjects))
    }

    func testNestingLimitOnAConcurrencyThread() async throws {
        let ok = String(repeating: "{\"k\":[", count: 256) + String(repeating: "]}", count: 256)
        let value = try await Task.detached { try JSONValue.parse(ok) }.value
        XCTAssertNotNil(value["k"])
    }

    func testColumnsCountUnicodeScalars() {
        let error = parseFailure("{\"é日😀\": x}")
        XCTAssertEqual(error?.column, 9)
    }

    func testErrorDescriptionFormat() {
        let error = JSONParseError(line: 3, column: 7, message: "expected ',' or '}' after object member")
        XCTAssertEqual(error.description, "line 3, column 7: expected ',' or '}' after object member")
    }

    func testParsesManySmallRecordsQuickly() throws {
        let record = Array(
            #"{"data":{"label":"hello","n":12,"tags":["a","b"]},"device":"d1","id":"r1","kind":"vocabulary","updatedAt":"2026-01-01T10:00:00.001Z-0000","updatedBy":"ada"}"#
                .utf8)
        let start = Date()
        for _ in 0..<10_000 {
            _ = try JSONValue.parse(record)
        }
        // Generous bound for debug builds on slow machines; catches accidental quadratic behaviour.
        XCTAssertLessThan(Date().timeIntervalSince(start), 20)
    }

    /// Strings are scanned eight bytes at a time: a special byte at any offset of a long string
    /// is still found (raw control characters refused where they are, others decoded).
    func testSpecialBytesAtEveryOffsetOfALongString() throws {
        for offset in 0..<24 {
            func string(_ inserted: [UInt8]) -> [UInt8] {
                var body = [UInt8](repeating: UInt8(ascii: "a"), count: 24)
                body.replaceSubrange(offset..<(offset + 1), with: inserted)
                return [UInt8(ascii: "\"")] + body + [UInt8(ascii: "\"")]
            }
            for control: UInt8 in [0x01, 0x0A, 0x1F] {
                XCTAssertThrowsError(try JSONValue.parse(string([control]))) { error in
                    XCTAssertEqual((error as? JSONParseError)?.column, offset + 2)
                }
            }
            let expected = String(repeating: "a", count: offset)
            XCTAssertEqual(try JSONValue.parse(string([0x7F])), .string(expected + "\u{7F}" + String(repeating: "a", count: 23 - offset)))
            XCTAssertEqual(try JSONValue.parse(string([0xC3, 0xA9])), .string(expected + "é" + String(repeating: "a", count: 23 - offset)))
            XCTAssertEqual(try JSONValue.parse(string(Array(#"\""#.utf8))), .string(expected + "\"" + String(repeating: "a", count: 23 - offset)))
            XCTAssertThrowsError(try JSONValue.parse(string([0xC3])), "a truncated UTF-8 sequence at offset \(offset)")
            XCTAssertEqual(try JSONValue.canonicalize(string([0x20]), pretty: false), string([0x20]))
        }
    }
}
