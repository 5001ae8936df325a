import XCTest

@testable import ConcordModel

/// `JSONValue.canonicalize` must give exactly what `parse` then `canonicalBytes`/`canonicalLine`
/// give: the same bytes for every valid document and the same error for every invalid one.
final class JSONTranscoderTests: XCTestCase {
    /// Both ways of making canonical bytes from `input`, as comparable outcomes.
    private func outcomes(_ input: [UInt8], pretty: Bool) -> (viaValues: Result<[UInt8], JSONParseError>, direct: Result<[UInt8], JSONParseError>) {
        let viaValues = Result { () throws(JSONParseError) -> [UInt8] in
            let value = try JSONValue.parse(input)
            return pretty ? value.canonicalBytes() : value.canonicalLine()
        }
        let direct = Result { () throws(JSONParseError) -> [UInt8] in try JSONValue.canonicalize(input, pretty: pretty) }
        return (viaValues, direct)
    }

    private func assertSame(_ input: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        for pretty in [true, false] {
            let (viaValues, direct) = outcomes(input, pretty: pretty)
            switch (viaValues, direct) {
            case (.success(let a), .success(let b)):
                XCTAssertEqual(text(b), text(a), "input: \(text(input))", file: file, line: line)
            case (.failure(let a), .failure(let b)):
                XCTAssertEqual(b, a, "input: \(text(input))", file: file, line: line)
            default:
                XCTFail("input \(text(input)): parse gave \(viaValues), canonicalize gave \(direct)", file: file, line: line)
            }
        }
    }

    func testHandWrittenDocuments() {
        let documents = [
            #"{"b":1,"a":2}"#, #"{"a":{"d":[1,{"z":null,"y":"x"}],"c":{}},"b":[]}"#, #"[]"#, #"{}"#, #"  "x"  "#,
            #"{"a\"b":1,"a#":2,"a":3}"#, "{\"k\\u0000\":\"\\u001f\\b\\f\\n\\r\\t\\/\"}", #"{"é":1,"e":2,"z":3}"#,
            #"{"\u00e9":1,"e\u0301":2}"#, "{\"\u{212A}\":1,\"K\":2}", #"{"K":1,"\u212a":2}"#,
            #"{"😀":"\ud83d\ude00","\ud83d\ude00x":1}"#, #"[-0, 1.50, 1e3, -2.5E-7, true, false, null]"#,
            #"{"a":1,}"#, #"[1,]"#, #"{"a" 1}"#, #"{"a":1 "b":2}"#, #"{"a":1,"a":{"x":}}"#, #"{"a":1,"a":2}"#,
            #"{"a":1,"b":2,"a":3}"#, "\u{FEFF}{}", #"{} x"#, #"[1 2]"#, #"{"a":"\x"}"#, #"{"a":"\ud800"}"#,
            #"{"a":"\udc00"}"#, "{\"a\":\"\u{01}\"}", #"{"a":01}"#, #"{"a":1.}"#, #"{"a":-}"#, #"{"a":tru}"#,
            #"{"a":"unterminated}"#, #"{"#, #"["#, "", #"{1:2}"#, #"{"a":[}"#,
        ]
        for document in documents { assertSame(Array(document.utf8)) }
        assertSame([0x22, 0xFF, 0x22])
        assertSame([0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D])
    }

    func testManyKeysAndDeepNesting() {
        let keys = (0..<40).map { "k\(($0 * 17) % 40)" }
        assertSame(Array(("{" + keys.map { "\"\($0)\":[\"\($0)\"]" }.joined(separator: ",") + "}").utf8))
        assertSame(Array(("{" + (keys + ["k3"]).map { "\"\($0)\":1" }.joined(separator: ",") + "}").utf8))
        let deep = String(repeating: "[", count: JSONValue.maxNestingDepth) + String(repeating: "]", count: JSONValue.maxNestingDepth)
        assertSame(Array(deep.utf8))
        assertSame(Array(("[" + deep + "]").utf8))
    }

    /// Random documents written in non-canonical ways (keys shuffled, escapes where none are
    /// needed, spaces), then each cut short or with one byte changed.
    func testRandomDocumentsAndTheirCorruptions() {
        var random = SplitMix64(seed: 20261122)
        for _ in 0..<400 {
            let document = Array(Self.randomText(depth: 0, using: &random).utf8)
            assertSame(document)
            if !document.isEmpty {
                assertSame(Array(document.prefix(Int.random(in: 0..<document.count, using: &random))))
                var changed = document
                changed[Int.random(in: 0..<changed.count, using: &random)] = Array(#"{}[]",:\ax0"#.utf8).randomElement(using: &random)!
                assertSame(changed)
            }
        }
    }

    static func randomText(depth: Int, using random: inout SplitMix64) -> String {
        let space = ["", " ", "\n  ", "\t"].randomElement(using: &random)!
        switch Int.random(in: 0..<(depth > 3 ? 4 : 7), using: &random) {
        case 0: return ["null", "true", "false"].randomElement(using: &random)!
        case 1: return ["0", "-0", "12", "1.50", "-3e7", "2E+2", "0.001"].randomElement(using: &random)!
        case 2, 3: return randomString(using: &random)
        case 4: return "[" + (0..<Int.random(in: 0..<4, using: &random)).map { _ in space + randomText(depth: depth + 1, using: &random) }.joined(separator: ",") + "]"
        default:
            let count = Int.random(in: 0..<(Bool.random(using: &random) ? 5 : 20), using: &random)
            let members = (0..<count).map { _ in randomString(using: &random) + space + ":" + space + randomText(depth: depth + 1, using: &random) }
            return "{" + space + members.joined(separator: "," + space) + "}"
        }
    }

    private static func randomString(using random: inout SplitMix64) -> String {
        let pieces = ["a", "b", "z", ",", "[", "}", "é", "e\u{301}", "\u{212A}", "K", "😀", "\\\"", "\\\\", "\\/", "\\n", "\\u0001", "\\u00e9",
                      "\\ud83d\\ude00", "\\u0041", " ", "\u{7F}"]
        return "\"" + (0..<Int.random(in: 0..<3, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined() + "\""
    }
}
