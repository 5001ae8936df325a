import XCTest

@testable import ConcordModel

final class CanonicalJSONTests: XCTestCase {
    func testPrettyLayout() {
        let value: JSONValue = ["b": [1, 2], "a": ["y": true, "x": nil], "c": [:], "d": []]
        XCTAssertEqual(
            text(value.canonicalBytes()),
            """
            {
              "a": {
                "x": null,
                "y": true
              },
              "b": [
                1,
                2
              ],
              "c": {},
              "d": []
            }

            """)
    }

    func testScalarsAndEmptyDocuments() {
        XCTAssertEqual(text(JSONValue.object([:]).canonicalBytes()), "{}\n")
        XCTAssertEqual(text(JSONValue.array([]).canonicalBytes()), "[]\n")
        XCTAssertEqual(text(JSONValue.null.canonicalBytes()), "null\n")
        XCTAssertEqual(text(JSONValue.bool(false).canonicalLine()), "false")
    }

    func testCompactLine() {
        let value: JSONValue = ["b": [1, 2], "a": 1, "c": ["z": [:], "e": []]]
        XCTAssertEqual(text(value.canonicalLine()), #"{"a":1,"b":[1,2],"c":{"e":[],"z":{}}}"#)
        XCTAssertEqual(value.canonicalLineString, #"{"a":1,"b":[1,2],"c":{"e":[],"z":{}}}"#)
    }

    func testKeysSortByUTF8Bytes() {
        // By bytes: "B" (0x42) < "a" (0x61) < "z" < "é" (0xC3 0xA9) < "日" (0xE6) < "😀" (0xF0).
        let value: JSONValue = ["😀": 1, "é": 2, "z": 3, "a": 4, "日": 5, "B": 6, "aa": 7]
        XCTAssertEqual(text(value.canonicalLine()), #"{"B":6,"a":4,"aa":7,"z":3,"é":2,"日":5,"😀":1}"#)
        // U+FF61 sorts before U+1F600 by bytes (EF < F0), though after it in UTF-16 order.
        let tricky: JSONValue = ["😀": 1, "\u{FF61}": 2]
        XCTAssertEqual(text(tricky.canonicalLine()), "{\"\u{FF61}\":2,\"😀\":1}")
    }

    func testStringEscapes() {
        let value = JSONValue.string("q\" b\\ s/ \u{08}\u{0C}\n\r\t \u{00}\u{1F}\u{7F} é 😀")
        XCTAssertEqual(text(value.canonicalLine()), "\"q\\\" b\\\\ s/ \\b\\f\\n\\r\\t \\u0000\\u001f\u{7F} é 😀\"")
    }

    func testEscapedKeys() {
        let value: JSONValue = ["a\nb": "x"]
        XCTAssertEqual(text(value.canonicalLine()), #"{"a\nb":"x"}"#)
    }

    func testNumbersKeptVerbatim() throws {
        let input = #"[1.50, -0, 1E+3, 0.0000001, 123456789012345678901234567890, 1e-7]"#
        let value = try JSONValue.parse(input)
        XCTAssertEqual(text(value.canonicalLine()), "[1.50,-0,1E+3,0.0000001,123456789012345678901234567890,1e-7]")
        XCTAssertEqual(value[0], .number("1.50"))
        XCTAssertEqual(value[0]?.doubleValue, 1.5)
        XCTAssertNil(value[0]?.intValue)
    }

    func testUnicodeEscapesDecodeToRawUTF8() throws {
        let value = try JSONValue.parse(#""\u00e9\ud83d\ude00\u002F\/""#)
        XCTAssertEqual(value, .string("é😀//"))
        XCTAssertEqual(text(value.canonicalLine()), "\"é😀//\"")
    }

    func testRoundTrip() throws {
        let samples: [JSONValue] = [
            ["name": "Ada", "tags": ["x", "y"], "nested": ["deep": [[], [:], [nil, true, false]]], "n": .number("-1.5e10")],
            ["": "", "control": "\u{01}\u{1F}", "quote": "\"\\", "emoji": "👩‍👩‍👧"],
            [1, "two", [3]],
            "just a string",
        ]
        for sample in samples {
            XCTAssertEqual(try JSONValue.parse(sample.canonicalBytes()), sample)
            XCTAssertEqual(try JSONValue.parse(sample.canonicalLine()), sample)
            // Canonical bytes are a fixed point.
            XCTAssertEqual(try JSONValue.parse(sample.canonicalBytes()).canonicalBytes(), sample.canonicalBytes())
        }
    }

    func testRandomRoundTrip() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<300 {
            let value = randomValue(depth: 0, rng: &rng)
            XCTAssertEqual(try JSONValue.parse(value.canonicalBytes()), value)
            XCTAssertEqual(try JSONValue.parse(value.canonicalLine()), value)
        }
    }

    func testAppendCanonicalLine() {
        var buffer = Array("x".utf8)
        JSONValue(["a": 1]).appendCanonicalLine(to: &buffer)
        XCTAssertEqual(text(buffer), #"x{"a":1}"#)
    }

    func testAccessors() {
        let value: JSONValue = ["s": "t", "b": true, "a": [1], "o": [:]]
        XCTAssertEqual(value["s"]?.stringValue, "t")
        XCTAssertEqual(value["b"]?.boolValue, true)
        XCTAssertEqual(value["a"]?.arrayValue, [1])
        XCTAssertEqual(value["o"]?.objectValue, [:])
        XCTAssertEqual(value["a"]?[0]?.intValue, 1)
        XCTAssertNil(value["missing"])
        XCTAssertNil(value["s"]?.objectValue)
        XCTAssertEqual(JSONValue("x"), .string("x"))
        XCTAssertEqual(JSONValue(3), .number("3"))
        XCTAssertTrue(JSONValue.null.isNull)
    }

    private func randomValue(depth: Int, rng: inout SplitMix64) -> JSONValue {
        let choice = depth > 3 ? Int.random(in: 0..<4, using: &rng) : Int.random(in: 0..<6, using: &rng)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .number(String(Int.random(in: -1_000_000...1_000_000, using: &rng)))
        case 3: return .string(randomString(rng: &rng))
        case 4: return .array((0..<Int.random(in: 0..<4, using: &rng)).map { _ in randomValue(depth: depth + 1, rng: &rng) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0..<4, using: &rng) {
                members[randomString(rng: &rng)] = randomValue(depth: depth + 1, rng: &rng)
            }
            return .object(members)
        }
    }

    private func randomString(rng: inout SplitMix64) -> String {
        let alphabet: [Unicode.Scalar] = ["a", "Z", "\"", "\\", "/", "\n", "\u{00}", "\u{1F}", "é", "日", "😀", " "]
        var s = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0..<6, using: &rng) {
            s.append(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)])
        }
        return String(s)
    }
}
